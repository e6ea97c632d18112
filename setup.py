"""Builds the optional C accelerator of the eager recording (gradtape/tracer/_crecord.c).

Everything else is in pyproject.toml. The extension is optional: without a C
compiler the install still succeeds and the tape records in pure Python
(recording.py), only slower.
"""
from setuptools import Extension, setup

setup(ext_modules=[Extension("gradtape.tracer._crecord", ["gradtape/tracer/_crecord.c"], optional=True)])

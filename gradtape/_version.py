"""gradtape's version, in a module of its own: parts of the package that record it (aot's
saved files and exported C) read it here rather than importing the package root."""
__version__ = "0.1.0"

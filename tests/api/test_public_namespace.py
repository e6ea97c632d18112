"""gradtape's namespace is its public API: `__all__`, documented, and nothing else but subpackages."""
import types

import gradtape as gt


def test_every_name_in_all_exists_and_has_a_docstring():
    undocumented = [name for name in gt.__all__ if not (getattr(gt, name).__doc__ or "").strip()]
    assert undocumented == [], f"public names without a docstring: {undocumented}"


def test_all_has_no_duplicates():
    assert len(gt.__all__) == len(set(gt.__all__))


def test_no_module_internal_name_leaks_into_the_namespace():
    # Anything public that is not in __all__ must be one of gradtape's own subpackages
    # (which Python binds on import); never a helper a module imported (np, bind, ...).
    leaked = [
        name for name in dir(gt)
        if not name.startswith("_") and name not in gt.__all__
        and not (isinstance(getattr(gt, name), types.ModuleType)
                 and getattr(gt, name).__name__ == f"gradtape.{name}")
    ]
    assert leaked == [], f"internal names in the gradtape namespace: {leaked}"


def test_the_internals_once_exported_are_gone():
    for name in ("np", "annotations", "bind", "ew", "implements", "promote_pair", "float_operand",
                 "convert", "as_tensor", "shape", "nn", "reductions", "elementwise"):
        assert not hasattr(gt, name), name


def test_linalg_is_the_public_numpy_linalg_namespace_not_the_functions_module():
    # gt.linalg was once gradtape.functions.linalg leaking; it is now gradtape.linalg, public.
    assert "linalg" in gt.__all__ and gt.linalg.__name__ == "gradtape.linalg"
    assert sorted(gt.linalg.__all__) == sorted(n for n in dir(gt.linalg) if not n.startswith("_"))


def test_star_import_gives_exactly_all():
    namespace = {}
    exec("from gradtape import *", namespace)
    assert sorted(n for n in namespace if n != "__builtins__") == sorted(gt.__all__)


def test_documented_entry_points_are_public():
    for name in ("GradientTape", "Variable", "constant", "grad", "value_and_grad", "differentiable",
                 "hessian", "vmap", "compile", "optimizers", "train_step", "scipy", "tanh", "sum", "where"):
        assert name in gt.__all__, name

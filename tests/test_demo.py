"""`python -m gradtape.demo` on tiny sizes: it trains, agrees with its NumPy twin, minimizes
Rosenbrock, and writes the plot."""
import numpy as np
import pytest

from gradtape import demo


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    path = tmp_path_factory.mktemp("demo") / "loss.png"
    lines = []
    summary = demo.main(["--steps", "60", "--lr", "0.05", "--plot", str(path)], points=40, dimension=10,
                        log=lambda *args, **kwargs: lines.append(" ".join(map(str, args))))
    return summary, lines, path


def test_demo_trains_the_mlp_and_matches_the_numpy_loop(run):
    summary, lines, _ = run
    mlp = summary["mlp"]
    assert len(mlp["losses"]) == 60 and mlp["losses"][-1] < 0.5 * mlp["losses"][0]
    assert mlp["accuracy"] > 0.8
    assert mlp["agreement"] < 1e-10  # hand-written NumPy gradients + Adam give the same parameters
    assert all(t > 0 for t in mlp["seconds_per_step"].values())
    text = "\n".join(lines)
    assert "compiled train_step (one native call)" in text and "plain NumPy, hand-written gradients" in text


def test_demo_minimizes_rosenbrock_with_one_compiled_call_per_evaluation(run):
    res = run[0]["rosenbrock"]["result"]
    np.testing.assert_allclose(res.x, np.ones(10), atol=1e-4)
    assert res.nfev == res.gradtape_calls["value_and_grad"]


def test_demo_writes_the_plot(run):
    summary, lines, path = run
    assert summary["plot"] is True
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 5000
    assert f"wrote the loss curves to {path}" in lines


def test_numpy_twin_has_the_gradients_of_the_gradtape_loss():
    """The hand-written backward pass of the demo's NumPy loop, against gradtape's gradient."""
    import gradtape as gt

    rng = np.random.default_rng(1)
    x, y = demo.spirals(10, rng)
    onehot = np.eye(2)[y]
    params = demo.init_params(rng)
    lr = 1e-3
    before = [p.copy() for p in params]
    demo.numpy_adam_step(params, x, onehot, lr)()
    grads = gt.grad(demo.loss_fn)(before, x, onehot)
    # Adam's first step (m = 0.1 g, v = 0.001 g^2, bias corrections 0.1 and 0.001) moves p by
    # lr * g / (|g| + epsilon / sqrt(0.001)) with Keras's epsilon 1e-7.
    for p, b, g in zip(params, before, grads):
        np.testing.assert_allclose((b - p) / lr, g / (np.abs(g) + 1e-7 / np.sqrt(0.001)), rtol=1e-7, atol=1e-12)


def test_steps_must_be_positive():
    with pytest.raises(SystemExit):
        demo.main(["--steps", "0"], log=lambda *a, **k: None)

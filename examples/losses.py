"""The functions the command-line examples in docs/aot_and_cache.md and docs/inspect_graph.md compile.

    cd examples
    python -m gradtape inspect losses:loss --shape w=4,3 --shape x=5,4
    python -m gradtape aot losses:loss --shape w=784,10 --shape x=128,784 --value-and-grad -o libloss.so

`loss(w, x)` is a tanh layer's squared output plus a weight penalty: w is
(inputs, outputs), x is (batch, inputs), the result a float scalar.
`mlp_loss` is a 3-layer MLP with layer norm (61 traced equations), for
`inspect --graph` with the shapes MLP_SHAPES.
"""
import gradtape as gt


def loss(w, x):
    """sum(tanh(x @ w)^2) + 0.1 * sum(w^2)."""
    return gt.sum(gt.tanh(x @ w) ** 2) + 0.1 * gt.sum(w * w)


MLP_SHAPES = ["w1=4,16", "b1=16", "w2=16,16", "b2=16", "w3=16,16", "b3=16", "gain=16", "bias=16",
              "w4=16,2", "b4=2", "x=32,4", "y=32,2"]


def layer_norm(h, gain, bias):
    mu = gt.mean(h, axis=-1, keepdims=True)
    var = gt.mean((h - mu) ** 2, axis=-1, keepdims=True)
    return (h - mu) / gt.sqrt(var + 1e-5) * gain + bias


def mlp_loss(w1, b1, w2, b2, w3, b3, gain, bias, w4, b4, x, y):
    """Mean squared error of a 3-layer tanh MLP with layer norm, plus a penalty on the last weights."""
    h = layer_norm(gt.tanh(x @ w1 + b1), gain, bias)
    h = layer_norm(gt.tanh(h @ w2 + b2), gain, bias)
    h = layer_norm(gt.tanh(h @ w3 + b3), gain, bias)
    return gt.mean((h @ w4 + b4 - y) ** 2) + 1e-4 * gt.sum(w4 ** 2)

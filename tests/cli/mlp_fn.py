"""A 3-layer MLP with layer norm and its loss: 61 traced equations, a picture that `inspect --graph` must
keep readable (tests/cli/test_html_graph.py, docs/images/graph_mlp.png)."""
import gradtape as gt

SHAPES = ["w1=4,16", "b1=16", "w2=16,16", "b2=16", "w3=16,16", "b3=16", "gain=16", "bias=16",
          "w4=16,2", "b4=2", "x=32,4", "y=32,2"]


def layer_norm(h, gain, bias):
    mu = gt.mean(h, axis=-1, keepdims=True)
    var = gt.mean((h - mu) ** 2, axis=-1, keepdims=True)
    return (h - mu) / gt.sqrt(var + 1e-5) * gain + bias


def mlp_loss(w1, b1, w2, b2, w3, b3, gain, bias, w4, b4, x, y):
    h = layer_norm(gt.tanh(x @ w1 + b1), gain, bias)
    h = layer_norm(gt.tanh(h @ w2 + b2), gain, bias)
    h = layer_norm(gt.tanh(h @ w3 + b3), gain, bias)
    return gt.mean((h @ w4 + b4 - y) ** 2) + 1e-4 * gt.sum(w4 ** 2)

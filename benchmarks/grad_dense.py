"""Gradients of a dense layer: the one-kernel adjoint with atomics against the gathered one.

    python -m benchmarks.grad_dense [--repeat 10] [--rounds 3] [--rows 1024] [--inputs 32]
                                    [--units 16] [--trips 64 256 1024] [--device NAME]

The layer is y[i, j] = tanh(sum_k x[i, k] w[k, j] + b[j]) (x: rows x inputs, w: inputs x
units), written as vkir users write it (a parallel nest over (i, j), a serial loop over k).
Timed in one run, each form once per round in rotating order (wall and process CPU seconds,
every thread counted, medians):

  forward     the layer kernel
  atomic      vkir.grad(layer, ("x", "w", "b")): one kernel, each invocation (i, j) adding into
              d_w[k, j] and d_b[j] (shared by every i) and d_x[i, k] (by every j) with atomics
  gather      vkir.autodiff.adjoint_kernels(...).build(): a first kernel writing d_pre[i, j],
              then one gather kernel per gradient over its own index space, no atomics

A training step (forward, the mean squared error's gradient, the adjoint for w and b, an SGD step)
on DeviceArrays with either adjoint, through vkir.Tape, and torch's (torch.tanh(x @ w + b),
autograd, the same step) on the CPU with its default threads and with one (on a loaded host torch's
OpenMP threads wait for cores: the one-thread form is the steadier reference). Then the replay of
accumulation loops: vkir.grad's adjoint of out[i] = sqrt(sum_p (y[i] p / trips - t[i])^2) for each
trip count in --trips (the same memory for every count): the stores one invocation of it
executes as generated (before the driver's compiler drops dead code, which on llvmpipe removed
the dead replays of the old quadratic form) and its time against the forward's.

Every gradient is checked against numpy in float64 before timing. Nothing here asserts a time;
tests/test_bench_grad_dense.py runs it small.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from .host_numpy import interleaved

LAYER = '''
@T.prim_func
def grad_dense(x: T.Buffer(("n", "k"), "float32"), w: T.Buffer(("k", "m"), "float32"),
               b: T.Buffer(("m",), "float32"), y: T.Buffer(("n", "m"), "float32")):
    for i in T.parallel(n):
        for j in T.parallel(m):
            acc = b[j]
            for p in T.serial(k):
                acc += x[i, p] * w[p, j]
            y[i, j] = T.tanh(acc)
'''

SEED = '''
@T.prim_func
def mse_seed(y: T.Buffer(("n", "m"), "float32"), t: T.Buffer(("n", "m"), "float32"),
             d_y: T.Buffer(("n", "m"), "float32")):
    for i in T.parallel(n):
        for j in T.parallel(m):
            d_y[i, j] = (y[i, j] - t[i, j]) * T.float32(2) / T.cast(n * m, "float32")
'''

LOSS = '''
@T.prim_func
def mse_rows(y: T.Buffer(("n", "m"), "float32"), t: T.Buffer(("n", "m"), "float32"),
             loss: T.Buffer(("n",), "float32")):
    for i in T.parallel(n):
        acc = T.float32(0)
        for j in T.serial(m):
            acc += (y[i, j] - t[i, j]) * (y[i, j] - t[i, j])
        loss[i] = acc / T.cast(n * m, "float32")
'''

STEP = '''
@T.prim_func
def sgd_step(w: T.Buffer(("k", "m"), "float32"), d_w: T.Buffer(("k", "m"), "float32"),
             b: T.Buffer(("m",), "float32"), d_b: T.Buffer(("m",), "float32"), lr: T.float32):
    for j in T.parallel(m):
        for p in T.serial(k):
            w[p, j] = w[p, j] - lr * d_w[p, j]
            d_w[p, j] = T.float32(0)
        b[j] = b[j] - lr * d_b[j]
        d_b[j] = T.float32(0)
'''

ROWS = '''
@T.prim_func
def row_fit(y: T.Buffer((1024,), "float32"), t: T.Buffer((1024,), "float32"),
            out: T.Buffer((1024,), "float32")):
    for i in T.parallel(1024):
        acc = T.float32(0)
        for p in T.serial({n}):
            r = y[i] * T.cast(p, "float32") * T.float32({step}) - t[i]
            acc += r * r
        out[i] = T.sqrt(acc)
'''

LR = 0.1


def _func(vkir, source: str):
    from vkir import T   # noqa: F401 - the script reads T from its environment

    return vkir.from_script(source)


def reference(x, w, b, d_y):
    """(d_x, d_w, d_b) in float64 for seed d_y."""
    x, w, b, d_y = (np.asarray(a, np.float64) for a in (x, w, b, d_y))
    d_pre = d_y * (1 - np.tanh(x @ w + b) ** 2)
    return d_pre @ w.T, x.T @ d_pre, d_pre.sum(axis=0)


def _close(got, want, what):
    scale = max(float(np.abs(want).max()), 1e-30)
    err = float(np.abs(np.asarray(got, np.float64) - want).max()) / scale
    if err > 1e-4:
        raise AssertionError(f"grad_dense: {what} differs from numpy by {err:.2e} of its largest "
                             "element")
    return err


def layer_forms(vkir, dev, n, k, m):
    """({form: call}, errors): forward and the two adjoints on DeviceArrays, each adjoint
    checked against numpy (largest relative error per gradient in `errors`)."""
    from vkir.autodiff.staged import adjoint_kernels

    layer = _func(vkir, LAYER)
    rng = np.random.default_rng(0)
    xs = rng.uniform(-1, 1, (n, k)).astype(np.float32)
    ws = (rng.standard_normal((k, m)) / np.sqrt(k)).astype(np.float32)
    bs = rng.uniform(-0.5, 0.5, m).astype(np.float32)
    seed = rng.uniform(-1, 1, (n, m)).astype(np.float32)
    x, w, b, y, d_y = (vkir.array(a, dev) for a in (xs, ws, bs, np.zeros((n, m), np.float32),
                                                    seed))
    fwd = vkir.build(layer, device=dev)
    atomic = vkir.build(vkir.grad(layer, ("x", "w", "b")), device=dev)
    plan = adjoint_kernels(layer, ("x", "w", "b"))
    staged = plan.build(device=dev)
    want = reference(xs, ws, bs, seed)
    errors = {}
    for name, adjoint in (("atomic", atomic), ("gather", staged)):
        grads = [vkir.zeros(a.shape, "float32", dev) for a in (x, w, b)]
        adjoint(x, w, b, y, d_y, *grads)
        for g, ref, what in zip(grads, want, ("d_x", "d_w", "d_b")):
            errors[f"{name} {what}"] = _close(g.numpy(), ref, f"{name} {what}")
    sinks = [vkir.zeros(a.shape, "float32", dev) for a in (x, w, b)]
    forms = {"forward": lambda: fwd(x, w, b, y),
             "atomic": lambda: atomic(x, w, b, y, d_y, *sinks),
             "gather": lambda: staged(x, w, b, y, d_y, *sinks)}
    return forms, errors, plan


def step_forms(vkir, torch, dev, n, k, m):
    """({form: one training step}, check): the training step four ways (see the module doc);
    `check()` runs one step of each from the same start and compares the updated w and b."""
    from vkir.autodiff.staged import adjoint_kernels

    layer, seed_k, loss_k, step_k = (_func(vkir, s) for s in (LAYER, SEED, LOSS, STEP))
    fwd, make_seed, loss, sgd = (vkir.build(f, device=dev) for f in (layer, seed_k, loss_k,
                                                                     step_k))
    rng = np.random.default_rng(1)
    xs = rng.uniform(-1, 1, (n, k)).astype(np.float32)
    ts = rng.uniform(-1, 1, (n, m)).astype(np.float32)
    w0 = (rng.standard_normal((k, m)) / np.sqrt(k)).astype(np.float32)
    b0 = np.zeros(m, np.float32)
    x, t = vkir.array(xs, dev), vkir.array(ts, dev)
    y, d_y = vkir.empty((n, m), "float32", dev), vkir.empty((n, m), "float32", dev)
    d_w, d_b = vkir.zeros((k, m), "float32", dev), vkir.zeros((m,), "float32", dev)
    atomic = vkir.build(vkir.grad(layer, ("w", "b")), device=dev)
    params = {"atomic": [vkir.array(w0, dev), vkir.array(b0, dev)],
              "gather": [vkir.array(w0, dev), vkir.array(b0, dev)],
              "vkir.Tape": [vkir.array(w0, dev), vkir.array(b0, dev)]}
    staged = adjoint_kernels(layer, ("w", "b")).build(device=dev)
    losses = vkir.empty((n,), "float32", dev)

    def on_device(adjoint, w, b):
        fwd(x, w, b, y)
        make_seed(y, t, d_y)
        adjoint(x, w, b, y, d_y, d_w, d_b)
        sgd(w, d_w, b, d_b, LR)   # also zeroes d_w, d_b for the next step

    def through_tape():
        w, b = params["vkir.Tape"]
        with vkir.Tape() as tape:
            fwd(x, w, b, y)
            loss(y, t, losses)
        tape.backward(losses)
        gw, gb = tape.grad(w), tape.grad(b)
        sgd(w, gw, b, gb, LR)

    tw = torch.from_numpy(w0.copy()).requires_grad_()
    tb = torch.from_numpy(b0.copy()).requires_grad_()
    tx, tt = torch.from_numpy(xs), torch.from_numpy(ts)

    def through_torch():
        tw.grad = tb.grad = None
        torch.nn.functional.mse_loss(torch.tanh(tx @ tw + tb), tt).backward()
        with torch.no_grad():
            tw.sub_(LR * tw.grad)
            tb.sub_(LR * tb.grad)

    threads = torch.get_num_threads()

    def torch_one_thread():
        torch.set_num_threads(1)
        try:
            through_torch()
        finally:
            torch.set_num_threads(threads)

    forms = {"atomic": lambda: on_device(atomic, *params["atomic"]),
             "gather": lambda: on_device(staged, *params["gather"]),
             "vkir.Tape": through_tape, "torch": through_torch, "torch-1t": torch_one_thread}

    def check():
        for name in ("atomic", "gather", "vkir.Tape"):
            w, b = params[name]
            w.write(w0)
            b.write(b0)
        d_w.write(np.zeros((k, m), np.float32))
        d_b.write(np.zeros(m, np.float32))
        with torch.no_grad():
            tw.copy_(torch.from_numpy(w0))
            tb.copy_(torch.from_numpy(b0))
        for name, f in forms.items():
            if name != "torch-1t":   # (one torch step: both forms update tw, tb)
                f()
        for name in ("atomic", "gather", "vkir.Tape"):
            w, b = params[name]
            _close(w.numpy() - w0, tw.detach().numpy() - w0, f"the {name} step's w update")
            _close(b.numpy() - b0, tb.detach().numpy() - b0, f"the {name} step's b update")

    return forms, check


def _value(e, env):
    from vkir.ir import Add, IntImm, Mul, Sub, Var

    if isinstance(e, IntImm):
        return e.value
    if isinstance(e, Var):
        return env[e]
    a, b = _value(e.a, env), _value(e.b, env)
    return {Add: a + b, Sub: a - b, Mul: a * b}[type(e)]


def executed_stores(s, env=None) -> int:
    """How many stores statement `s` executes, its IR as generated (every branch counted: an
    upper bound), for loops whose ranges are integer arithmetic on constants and loop variables:
    the work of an adjoint before a driver's compiler removes what it finds dead."""
    from vkir.ir import AllocBuffer, BufferStore, DeclBuffer, For, IfThenElse, LetStmt, SeqStmt

    env = env or {}
    if isinstance(s, BufferStore):
        return 1
    if isinstance(s, SeqStmt):
        return sum(executed_stores(x, env) for x in s.seq)
    if isinstance(s, (AllocBuffer, DeclBuffer)):
        return executed_stores(s.body, env)
    if isinstance(s, LetStmt):
        try:
            env = {**env, s.var: _value(s.value, env)}
        except (KeyError, AttributeError):
            pass   # not loop arithmetic: no loop range uses it
        return executed_stores(s.body, env)
    if isinstance(s, IfThenElse):
        return executed_stores(s.then_case, env) + (
            executed_stores(s.else_case, env) if s.else_case is not None else 0)
    if isinstance(s, For):
        lo, n = _value(s.min, env), _value(s.extent, env)
        if s.kind == "parallel":   # one invocation's work
            return executed_stores(s.body, {**env, s.loop_var: lo})
        return sum(executed_stores(s.body, {**env, s.loop_var: lo + v}) for v in range(n))
    return 0


def replay_forms(vkir, dev, trips):
    """{trip count: ({"forward": call, "adjoint": call}, stores one forward invocation
    executes, stores one adjoint invocation executes)}, each adjoint checked against numpy."""
    out = {}
    rng = np.random.default_rng(2)
    ys, ts, seed = (rng.uniform(-1, 1, 1024).astype(np.float32) for _ in range(3))
    for n in trips:
        f = _func(vkir, ROWS.format(n=n, step=1.0 / n))
        y, t, o, s = (vkir.array(a, dev) for a in (ys, ts, np.zeros(1024, np.float32), seed))
        dy, dt = vkir.zeros(1024, "float32", dev), vkir.zeros(1024, "float32", dev)
        fwd = vkir.build(f, device=dev)
        adj = vkir.build(vkir.grad(f, ("y", "t")), device=dev)
        adj(y, t, o, s, dy, dt)
        c = np.arange(n, dtype=np.float64) * np.float32(1.0 / n)
        r = ys.astype(np.float64)[:, None] * c - ts[:, None]
        norm = np.sqrt((r * r).sum(axis=1))
        _close(dy.numpy(), seed / norm * (r * c).sum(axis=1), f"row_fit's d_y at {n} trips")
        out[n] = ({"forward": (lambda fwd=fwd, y=y, t=t, o=o: fwd(y, t, o)),
                   "adjoint": (lambda adj=adj, a=(y, t, o, s, dy, dt): adj(*a))},
                  executed_stores(f.body), executed_stores(vkir.grad(f, ("y", "t")).body))
    return out


def _row(name, got, base):
    w, c = got
    bw, bc = base
    return (f"  {name:10s} {w * 1e3:9.3f} ms wall {c * 1e3:9.3f} ms CPU "
            f"{1 / max(c, 1e-9):9.1f} /CPU-s   {w / bw:6.2f}x wall {c / max(bc, 1e-9):6.2f}x CPU")


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rows", type=int, default=1024)
    ap.add_argument("--inputs", type=int, default=32)
    ap.add_argument("--units", type=int, default=16)
    ap.add_argument("--trips", type=int, nargs="*", default=[64, 256, 1024])
    ap.add_argument("--device", default=None)
    ap.add_argument("--sections", nargs="*", default=["layer", "step", "replay"],
                    choices=["layer", "step", "replay"])
    args = ap.parse_args(argv)
    import torch

    import vkir

    dev = vkir.device(args.device)
    n, k, m = args.rows, args.inputs, args.units
    print(f"device: {dev.info}")
    found = {}
    if "layer" in args.sections:
        forms, errors, plan = layer_forms(vkir, dev, n, k, m)
        print(f"dense layer {n}x{k} -> {m}: gradients of x, w, b (largest error against numpy: "
              f"atomic {max(v for e, v in errors.items() if e.startswith('atomic')):.1e}, "
              f"gather {max(v for e, v in errors.items() if e.startswith('gather')):.1e}); "
              f"gather: {len(plan.kernels)} kernels, gathered {', '.join(plan.gathered) or '-'}"
              f", atomic {', '.join(plan.atomic) or '-'}")
        layer = interleaved(forms, args.repeat, args.rounds)
        for name, got in layer.items():
            print(_row(name, got, layer["forward"]))
        found.update(layer=layer, errors=errors, gathered=plan.gathered, atomic=plan.atomic)
    if "step" in args.sections:
        steps, check = step_forms(vkir, torch, dev, n, k, m)
        check()
        print(f"training step (forward, mse gradient, adjoint of w and b, sgd); torch with "
              f"{torch.get_num_threads()} threads and with 1 (torch-1t, the ratios' base):")
        step = interleaved(steps, args.repeat, args.rounds)
        for name, got in step.items():
            print(_row(name, got, step["torch-1t"]))
        found["step"] = step
    if "replay" in args.sections:
        print("accumulation loop replay: out[i] = sqrt(sum_p (y[i] p / trips - t[i])^2), 1024 "
              "rows (adjoint of y, t; the same work per trip and memory for every count):")
        replay = found["replay"] = {}
        for trips, (calls, f_ops, a_ops) in replay_forms(vkir, dev, args.trips).items():
            replay[trips] = interleaved(calls, args.repeat, args.rounds)
            replay[trips]["stores"] = (f_ops, a_ops)
            fw, fc = replay[trips]["forward"]
            aw, ac = replay[trips]["adjoint"]
            print(f"  {trips:5d} trips: stores per invocation forward {f_ops:7d} adjoint "
                  f"{a_ops:9d}; forward {fw * 1e3:7.3f} ms ({fc * 1e3:7.3f} CPU), adjoint "
                  f"{aw * 1e3:7.3f} ms ({ac * 1e3:7.3f} CPU): {aw / fw:5.2f}x wall "
                  f"{ac / max(fc, 1e-9):5.2f}x CPU")
    return found


if __name__ == "__main__":
    main()
    sys.exit(0)

"""The script front end: `T` (with `@T.prim_func`), `from_script`, and the printer `script`.

```python
from vkir import T

@T.prim_func
def vadd(a: T.Buffer(("n",), "float32"), b: T.Buffer(("n",), "float32"),
         c: T.Buffer(("n",), "float32")):
    for bx in T.thread_binding((n + 63) // 64, "blockIdx.x"):   # "n": a symbolic int32 size
        for tx in T.thread_binding(64, "threadIdx.x"):
            i = bx * 64 + tx                                     # a let binding
            if i < n:
                c[i] = a[i] + b[i]
```

The body is never executed: it is read from the source with `ast`. Python numbers and strings of
the enclosing scope (globals, closures, or `from_script(text, env=...)`) may be used by name.

Surface (docs/language.md is the full reference):
- parameters `T.Buffer(shape, dtype, strides=(), elem_offset=0, scope="global")` (string shape
  entries are symbolic int32 sizes shared by name, `T.int64("n")` an int64 one) and scalars
  `T.int32`, `T.float16`, ...; rarely needed: `T.handle`, a bare pointer `T.Ptr("float32",
  scope="global")`, and `data_dtype=` / `data_scope=` on a buffer whose fresh data pointer has
  another type (an implicit pointer cast, rejected by the checker but printable);
- loops `T.serial(ext)` / `T.serial(start, stop)`, `T.unroll`, `T.vectorized`, `T.grid(a, b, ...)`,
  `T.thread_binding(ext, "threadIdx.x")`, each with `annotations={...}` (and `dtype=` for a loop
  var whose dtype differs from the extent's);
- `A[i, j] = v` (and `A[i] += v`); `x = e` / `x: T.int64 = e` bind over the rest of the block
  (names are immutable: re-binding a visible name is an error); `with T.let(e) as x:` binds over
  the indented block only; `if/elif/else`; `pass` (an empty SeqStmt);
- `X = T.alloc_buffer(shape, dtype, scope=...)`, `X = T.decl_buffer(shape, dtype, data=A.data)`
  (the explicit pointer cast; without `data` a fresh buffer), also as `with ... as X:`;
- `with T.async_scope():`, `with T.async_commit_queue(q):`, `with T.async_wait_queue(q, n):`,
  `T.barrier()`, `T.evaluate(e)`, `T.func_attr({...})` (first in the body);
- expressions: `+ - * / // %` (`/` is Div: truncating on ints; `//`, `%` floor), comparisons
  (not chained), `and or not`, `& | ^ ~ << >>`, `T.ramp`, `T.broadcast`, `T.cast`, `T.reinterpret`,
  `T.select`, `T.if_then_else`, `T.min`, `T.max`, `T.truncdiv`, `T.truncmod`, `T.floordiv`,
  `T.floormod`, `T.shuffle([vecs], [lanes])`, `T.let(x := value, body)`, every op of
  vkir.ir.op.OPS as `T.<op>(...)`, `T.call(dtype, op, *args)` for any call, typed constants
  `T.float32(1.5)`, `T.int64(3)`, `T.bool(True)`, `T.float32("inf")`.
- Python literals take the type of the other operand (broadcast next to a vector), else int32 /
  float32 / bool; a float literal never becomes an int. Typed values never convert silently.

Mistakes raise `vkir.ScriptError` with file:line:col, the source line and a caret; statements and
most expressions carry a `span` for later diagnostics.
"""

from .namespace import T
from .entry import from_script, prim_func
from ..ir.printer import script

__all__ = ["T", "from_script", "prim_func", "script"]

"""The run's unhandled promise rejections, from QuickJS's own rejection tracker.

`RejectionTracker` installs the engine's `JS_SetHostPromiseRejectionTracker` on the binding's
runtime through ctypes (the binding exposes none), keeps each rejection that has no handler until
one is attached, and after the job queue is empty hands the rest to the worker as `Rejection`s,
which fail the run. It also tracks the peak of the engine's heap from the interrupt handler, so a
`null` or unshowable rejection near the memory limit is reported as the limit (`near_memory_limit`,
`memory_high`).
"""

from __future__ import annotations

import ctypes

TYPE_CHECKING = False  # not typing's (see jsonwire: the worker's start stays lean)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

OUT_OF_MEMORY_SHARE = 0.75  # of the heap limit reached: then a `null` is the engine's
MALLOC_STATE = 4 * 8  # JSRuntime starts with 4 allocator functions, then count, size, limit
TAG_NULL = 2  # JS_TAG_NULL; tags below 0 carry a reference count
# The binding's layouts this relies on, checked in `RejectionTracker.__init__`: its `Context`
# starts (after the object header) with its `JSRuntime *` and `JSContext *`, its `Object` with its
# `Context` and its `JSValue`; a `JSValue` is a 64-bit payload and a 64-bit tag (no NaN boxing).
HEADER = object.__basicsize__  # the Python object header before a C object's own fields

# Run in the context once the queue is empty: the text of a reason, its stack if it has one;
# null when that fails (an error the engine half built when it ran out of memory).
DESCRIBE = r"""
(function __workbench_describe(holder) {
  try {
    const r = holder.reason;
    return r instanceof Error && r.stack ? String(r) + "\n" + r.stack : String(r);
  } catch (e) {
    return null;
  }
})
"""
UNSHOWN = "(a value that cannot be shown as text)"


class JSValue(ctypes.Structure):
    """QuickJS's `JSValue` on a 64-bit build: a payload (a pointer for tags below 0), a tag."""

    _fields_ = [("payload", ctypes.c_uint64), ("tag", ctypes.c_int64)]


TRACKER = ctypes.CFUNCTYPE(None, ctypes.c_void_p, JSValue, JSValue, ctypes.c_int, ctypes.c_void_p)
INTERRUPT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)


class Rejection:
    """An unhandled rejection: the reason as text (with its stack), and whether the engine's
    memory limit caused it."""

    __slots__ = ("out_of_memory", "text")

    def __init__(self, text: str, out_of_memory: bool) -> None:
        self.text = text
        self.out_of_memory = out_of_memory


class Tracked:
    """A rejected promise no handler has taken yet, and its reason (both duplicated)."""

    __slots__ = ("promise", "reason")

    def __init__(self, promise: JSValue, reason: JSValue) -> None:
        self.promise = promise
        self.reason = reason


class RejectionTracker:
    """Tracks the unhandled rejections of one `_quickjs.Context`; `close()` it before the
    context is dropped."""

    def __init__(self, engine: Any, context: Any, memory_high: Callable[[], None]) -> None:
        self.lib = ctypes.CDLL(engine.__file__)  # already loaded: the same library
        self.lib.JS_GetRuntime.argtypes = [ctypes.c_void_p]
        self.lib.JS_GetRuntime.restype = ctypes.c_void_p
        self.lib.JS_SetHostPromiseRejectionTracker.argtypes = [
            ctypes.c_void_p,
            TRACKER,
            ctypes.c_void_p,
        ]
        self.lib.JS_SetInterruptHandler.argtypes = [ctypes.c_void_p, INTERRUPT, ctypes.c_void_p]
        self.lib.JS_SetPropertyStr.argtypes = [
            ctypes.c_void_p,
            JSValue,
            ctypes.c_char_p,
            JSValue,
        ]
        self.free_value = self.lib["__JS_FreeValue"]  # by item: a class would mangle the name
        self.free_value.argtypes = [ctypes.c_void_p, JSValue]
        self.context = context
        self.runtime = ctypes.c_void_p.from_address(id(context) + HEADER).value
        self.js_context = ctypes.c_void_p.from_address(id(context) + HEADER + 8).value
        if not self.runtime or self.lib.JS_GetRuntime(self.js_context) != self.runtime:
            raise RuntimeError("the QuickJS binding's Context layout is not the expected one")
        usage = context.memory()
        count, self.heap, self.heap_limit = (
            ctypes.c_size_t.from_address(self.runtime + MALLOC_STATE + offset)
            for offset in (0, 8, 16)
        )
        if (count.value, self.heap.value) != (usage["malloc_count"], usage["malloc_size"]):
            raise RuntimeError("the QuickJS runtime's memory state is not where it is expected")
        self.peak_heap = self.heap.value
        self.memory_high = memory_high  # called once, when the heap first reaches the share
        self.describe: Callable[[Any], str | None] = context.eval(DESCRIBE)
        self.holder = context.eval("({__proto__: null})")  # no inherited setter to run
        owner = ctypes.c_void_p.from_address(id(self.holder) + HEADER).value
        if owner != id(context):
            raise RuntimeError("the QuickJS binding's Object layout is not the expected one")
        self.tracked: dict[int, Tracked] = {}
        self.error: BaseException | None = None  # raised by `unhandled()`
        self.callback = TRACKER(self.track)
        self.lib.JS_SetHostPromiseRejectionTracker(self.runtime, self.callback, None)
        self.interrupt = INTERRUPT(self.poll)
        self.lib.JS_SetInterruptHandler(self.runtime, self.interrupt, None)

    def track(self, _: int, promise: JSValue, reason: JSValue, handled: int, __: int) -> None:
        """The engine's callback: `promise` was rejected without a handler, or got one."""
        try:
            if handled:
                gone = self.tracked.pop(promise.payload, None)
                if gone is not None:
                    self.free(gone.promise)
                    self.free(gone.reason)
                return
            self.poll(None, None)  # the heap may be full right now
            self.tracked[promise.payload] = Tracked(dup(promise), dup(reason))
        except BaseException as error:  # never into the engine; MemoryError under RLIMIT_AS
            self.error = self.error or error

    def poll(self, _: int | None, __: int | None) -> int:
        """The engine's interrupt handler: note the heap's peak; never interrupt."""
        try:
            if self.heap.value > self.peak_heap:
                was_high = self.near_memory_limit()
                self.peak_heap = self.heap.value
                if not was_high and self.near_memory_limit():
                    self.memory_high()
        except BaseException as error:  # never into the engine
            self.error = self.error or error
        return 0

    def near_memory_limit(self) -> bool:
        """Whether the engine's heap reached `OUT_OF_MEMORY_SHARE` of its limit in the run."""
        return self.peak_heap >= self.heap_limit.value * OUT_OF_MEMORY_SHARE

    def unhandled(self) -> list[Rejection]:
        """The rejections no handler took, in the order they happened; the first error the
        callback met, raised."""
        if self.error is not None:
            raise self.error
        rejections = []
        holder = JSValue.from_address(id(self.holder) + HEADER + 8)
        # Describing runs JavaScript, the skill's own too (a reason's `toString`), still
        # under the run's wall clock; a rejection made meanwhile is not reported.
        for tracked in list(self.tracked.values()):
            reason = dup(tracked.reason)
            stored = self.lib.JS_SetPropertyStr(self.js_context, holder, b"reason", reason) >= 0
            text = self.describe(self.holder) if stored else None  # not stored: out of memory
            suspect = text is None or tracked.reason.tag == TAG_NULL
            rejections.append(Rejection(text or UNSHOWN, suspect and self.near_memory_limit()))
        return rejections

    def close(self) -> None:
        """Stop tracking and let go of every promise and reason still held."""
        self.lib.JS_SetHostPromiseRejectionTracker(self.runtime, TRACKER(), None)
        self.lib.JS_SetInterruptHandler(self.runtime, INTERRUPT(), None)
        self.callback, self.interrupt = TRACKER(), INTERRUPT()  # no cycle keeps the context
        for tracked in self.tracked.values():
            self.free(tracked.promise)
            self.free(tracked.reason)
        self.tracked.clear()

    def free(self, value: JSValue) -> None:
        """QuickJS's inline `JS_FreeValue`: drop one reference, free the value at none."""
        if value.tag < 0:
            count = ctypes.c_int.from_address(value.payload)
            count.value -= 1
            if count.value <= 0:
                self.free_value(self.js_context, value)


def dup(value: JSValue) -> JSValue:
    """QuickJS's inline `JS_DupValue`: one more reference (the count leads the object)."""
    if value.tag < 0:
        ctypes.c_int.from_address(value.payload).value += 1
    return JSValue(value.payload, value.tag)

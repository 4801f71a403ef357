// dbglib.c: a shared library whose inner functions are static: once the
// library is stripped they are named only by its separate debug file.
// dbg_entry → hidden_outer → hidden_inner → dbg_leaf.
volatile int dbg_sink;

__attribute__((noinline, noclone)) int dbg_leaf(int x) { dbg_sink += x; return dbg_sink & 1; }
static __attribute__((noinline, noclone)) int hidden_inner(int x) { return dbg_leaf(x) + 1; }
static __attribute__((noinline, noclone)) int hidden_outer(int x) { return hidden_inner(x) + 1; }
__attribute__((noinline, noclone)) int dbg_entry(int x) { return hidden_outer(x) + 1; }

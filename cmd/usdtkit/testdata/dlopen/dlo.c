/* The library testdata/dlopen/main.c dlopens; TestTraceCommandLibrary
 * builds it at test time:
 *   gcc -O2 -shared -fPIC -o DIR/lib/libdlo.so dlo.c */
__attribute__((noinline)) int dlo_work(int x) { return x * 3 + 1; }

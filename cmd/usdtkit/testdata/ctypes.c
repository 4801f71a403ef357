/* ctypes.c: C structs, unions, arrays and pointers for the program tests
 * of C types (trace_ctypes_test.go), traced with bpftrace and with
 * usdtkit. Built at test time:
 *   gcc -O0 -g -o ctypes ctypes.c
 * It calls visit(&first, vals, &pp) once and exits; first links to
 * second, and pp points to second. The programs declare the same types. */
#include <stdint.h>
#include <string.h>

struct inner {
	int16_t a;
	uint8_t b[3];
};

struct rec {
	int32_t id;
	char name[8];
	struct inner in;
	int32_t grid[2][3];
	int32_t *ptrs[2];
	struct rec *next;
	uint32_t lo : 4, mid : 8, hi : 20;
	int8_t neg : 3;
	union {
		uint32_t u;
		int16_t s[2];
	} un;
	uint64_t big;
};

int32_t vals[4] = {10, -20, 30, -40};

__attribute__((noinline)) long visit(struct rec *r, int32_t *arr, struct rec **pp) {
	__asm__ volatile("" ::: "memory");
	return r->id + arr[0] + (*pp)->id;
}

int main(void) {
	static struct rec second, first;
	struct rec *pp = &second;
	long sink = 0;
	second.id = 2;
	strcpy(second.name, "second");
	first.id = -7;
	memcpy(first.name, "eightchr", 8); /* no NUL */
	first.in.a = -300;
	first.in.b[0] = 1, first.in.b[1] = 2, first.in.b[2] = 250;
	for (int i = 0; i < 6; i++)
		first.grid[i / 3][i % 3] = i * i - 3;
	first.ptrs[0] = &vals[3];
	first.ptrs[1] = &vals[1];
	first.next = &second;
	first.lo = 9, first.mid = 200, first.hi = 1000000, first.neg = -3;
	first.un.u = 0xfffe0003;
	first.big = 1ull << 40;
	sink += visit(&first, vals, &pp);
	return sink == 0;
}

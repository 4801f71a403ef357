// arm64chain.c: known call chains on arm64 for the unwinder's tests,
// run under qemu-user on other hosts. Built at test time with
//   aarch64-linux-gnu-gcc -O2 -fomit-frame-pointer -o arm64chain arm64chain.c
// (and again with -mbranch-protection=pac-ret, whose saved return
// addresses are signed). Usage: arm64chain levels|sort OUT
//   levels  main → level1 → level2 → level3 → leaf → capture
//   sort    main → sort_them → qsort (libc) → cmp → leaf → capture
// capture, at its first instruction, records pc, sp, x29 and x30 (its
// return address, still in the link register) and jumps to dump, which
// writes them to OUT.regs, the stack from that sp to the end of its
// mapping to OUT.stack and /proc/self/maps to OUT.maps, once. The caller's
// frames above sp are untouched by then: dump's own frame is below it.
// noipa keeps every function a real, separate call; each call's result
// is used after it, so no call becomes a tail jump.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct regs {
	unsigned long pc, sp, fp, lr;
};

__attribute__((visibility("hidden"))) struct regs cap;
static const char *out;
static int written;
volatile int sink;

int capture(int x);
__asm__(".text\n"
	".globl capture\n"
	".type capture, %function\n"
	"capture:\n"
	".cfi_startproc\n"
	"	adrp x16, cap\n"
	"	add x16, x16, :lo12:cap\n"
	"	adr x17, capture\n"
	"	str x17, [x16]\n"
	"	mov x17, sp\n"
	"	str x17, [x16, 8]\n"
	"	stp x29, x30, [x16, 16]\n"
	"	b dump\n"
	".cfi_endproc\n"
	".size capture, .-capture\n");

// stackEnd returns the end of the mapping holding sp, from /proc/self/maps.
static unsigned long stackEnd(unsigned long sp) {
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	unsigned long lo, hi, end = 0;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo <= sp && sp < hi)
			end = hi;
	if (f)
		fclose(f);
	return end;
}

static FILE *create(const char *suffix) {
	char path[4096];
	snprintf(path, sizeof path, "%s.%s", out, suffix);
	FILE *f = fopen(path, "w");
	if (!f) {
		perror(path);
		exit(3);
	}
	return f;
}

__attribute__((noipa, used)) int dump(int x) {
	if (written)
		return x;
	written = 1;
	struct regs r = cap;
	unsigned long end = stackEnd(r.sp);
	if (end == 0 || end - r.sp > (1 << 20)) {
		fprintf(stderr, "no stack mapping at %#lx\n", r.sp);
		exit(3);
	}
	FILE *f = create("regs");
	fprintf(f, "%lx %lx %lx %lx\n", r.pc, r.sp, r.fp, r.lr);
	fclose(f);
	f = create("stack");
	fwrite((const void *)r.sp, 1, end - r.sp, f);
	fclose(f);
	f = create("maps");
	FILE *m = fopen("/proc/self/maps", "r");
	char buf[4096];
	size_t n;
	while (m && (n = fread(buf, 1, sizeof buf, m)) > 0)
		fwrite(buf, 1, n, f);
	if (m)
		fclose(m);
	fclose(f);
	return x;
}

__attribute__((noipa)) int leaf(int x) {
	int r = capture(x);
	sink += r;
	return r + 1;
}

__attribute__((noipa)) int cmp(const void *a, const void *b) {
	int x = *(const int *)a, y = *(const int *)b;
	sink += leaf(x);
	return (x > y) - (x < y);
}

__attribute__((noipa)) void sort_them(int *v, int n) {
	qsort(v, n, sizeof *v, cmp);
	sink += v[0];
}

__attribute__((noipa)) int level3(int x) { return leaf(x) + 1; }
__attribute__((noipa)) int level2(int x) { return level3(x) + 1; }
__attribute__((noipa)) int level1(int x) { return level2(x) + 1; }

int main(int argc, char **argv) {
	if (argc != 3)
		return 2;
	out = argv[2];
	if (!strcmp(argv[1], "levels")) {
		sink += level1(1);
	} else if (!strcmp(argv[1], "sort")) {
		int v[4] = {3, 1, 2, 0};
		sort_them(v, 4);
	} else {
		return 2;
	}
	return written ? 0 : 1;
}

// names.cc: a known C++ call chain for the stack tests. Each line on
// stdin runs main → shapes::Area<double>::of → shapes::Circle::area(int)
// → leaf and prints "done". Built -O0 -fno-omit-frame-pointer, and -O2
// -fomit-frame-pointer: noinline keeps each call a frame, noclone keeps
// GCC from renaming a function to a clone ("[clone .isra.0]").
#include <cstdio>
#include <cstring>

volatile int sink;

extern "C" __attribute__((noinline, noclone)) int leaf(int x) { sink += x; return sink & 1; }

namespace shapes {
struct Circle {
	int r;
	__attribute__((noinline, noclone)) int area(int scale) const { return leaf(r * scale) + 1; }
};
template <typename T> struct Area {
	__attribute__((noinline, noclone)) static int of(const Circle &c, T k) { return c.area(int(k)) + 1; }
};
} // namespace shapes

int main() {
	char line[64];
	setvbuf(stdout, nullptr, _IOLBF, 0);
	while (fgets(line, sizeof line, stdin)) {
		shapes::Circle c{2};
		sink += shapes::Area<double>::of(c, 1.5);
		printf("done\n");
	}
	return 0;
}

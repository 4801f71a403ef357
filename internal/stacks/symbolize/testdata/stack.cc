// Build: g++ -g -O1 -o stackcc stack.cc (the tests build it).
// On each line of stdin it prints "NAME ADDRESS" lines, then "done".
#include <cstdio>
#include <string>

namespace demo {
struct Widget {
	__attribute__((noinline)) int poke(int x);
};
int Widget::poke(int x) { return x * 3; }

template <typename T> __attribute__((noinline)) T twice(T x) { return x + x; }
}  // namespace demo

int main() {
	char line[256];
	setvbuf(stdout, nullptr, _IOLBF, 0);
	int (demo::Widget::*poke)(int) = &demo::Widget::poke;
	void *pp;
	static_assert(sizeof poke >= sizeof pp, "member pointer");
	__builtin_memcpy(&pp, &poke, sizeof pp);
	while (std::fgets(line, sizeof line, stdin)) {
		std::printf("demo::Widget::poke(int) %p\n", pp);
		std::printf("int demo::twice<int>(int) %p\n", (void *)&demo::twice<int>);
		std::printf("done\n");
	}
	demo::Widget w;
	return w.poke(demo::twice(1)) == 0;
}

// stdsort sorts, for TestStdSortMatchesLibstdcxx, records read from stdin:
// "s N v1 … vN" with std::sort, "h N v1 … vN" with std::partial_sort over
// the whole range (libstdc++'s heapsort fallback), both by value only; it
// prints the original indexes in sorted order, one record a line.
// Build: g++ -O1 -o stdsort stdsort.cc
#include <algorithm>
#include <iostream>
#include <utility>
#include <vector>

int main() {
	char mode;
	size_t n;
	while (std::cin >> mode >> n) {
		std::vector<std::pair<long, size_t>> v(n);
		for (size_t i = 0; i < n; i++) {
			std::cin >> v[i].first;
			v[i].second = i;
		}
		auto less = [](const auto &a, const auto &b) { return a.first < b.first; };
		if (mode == 's')
			std::sort(v.begin(), v.end(), less);
		else
			std::partial_sort(v.begin(), v.end(), v.end(), less);
		for (size_t i = 0; i < n; i++)
			std::cout << (i ? " " : "") << v[i].second;
		std::cout << "\n";
	}
	return 0;
}

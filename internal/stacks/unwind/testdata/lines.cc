// lines.cc: a C++ program that maps libstdc++ and libc, for the table
// tests. Built at test time: g++ -O2 -o lines lines.cc
// It answers each line on stdin with "done" (testutil.Tracee's protocol).
#include <iostream>
#include <string>

int main() {
	std::string line;
	while (std::getline(std::cin, line))
		std::cout << "done" << std::endl;
}

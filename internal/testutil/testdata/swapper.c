// swapper.c is a hostile tracee for tests of how usdtkit opens a
// process's files (internal/procfs.Open). Built twice by BuildSwapper: as
// the process's own executable, and with -DHOST as a different file with
// different probes that the process tries to make usdtkit read instead.
//
//   swapper swap A B   print "ready", then exchange the names A and B
//                      (renameat2 RENAME_EXCHANGE) forever, firing
//                      swap:hit(VALUE) after each exchange. A is the
//                      directory the executable was started from; B is an
//                      absolute symlink to a directory holding the HOST
//                      build, or a directory holding a FIFO of the same name.
//   swapper map FILE.. mmap each FILE PROT_READ|PROT_EXEC, print "ready",
//                      and wait for stdin to close.
//
// Probes: swap:hit(VALUE) in both builds (VALUE 1111 here, 2222 in HOST);
// own:only here, host:only in HOST, never fired.
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sdt.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifdef HOST
#define VALUE 2222
#else
#define VALUE 1111
#endif

__attribute__((noinline)) void only(void) {
#ifdef HOST
	DTRACE_PROBE(host, only);
#else
	DTRACE_PROBE(own, only);
#endif
}

int main(int argc, char **argv) {
	if (argc == 4 && strcmp(argv[1], "swap") == 0) {
		printf("ready\n");
		fflush(stdout);
		for (;;) {
			if (syscall(SYS_renameat2, AT_FDCWD, argv[2], AT_FDCWD, argv[3], RENAME_EXCHANGE) != 0) {
				perror("renameat2");
				return 1;
			}
			DTRACE_PROBE1(swap, hit, VALUE);
		}
	}
	if (argc >= 2 && strcmp(argv[1], "map") == 0) {
		for (int i = 2; i < argc; i++) {
			int fd = open(argv[i], O_RDONLY);
			struct stat st;
			if (fd < 0 || fstat(fd, &st) != 0) {
				perror(argv[i]);
				return 1;
			}
			if (mmap(NULL, st.st_size, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0) == MAP_FAILED) {
				perror("mmap");
				return 1;
			}
			close(fd);
		}
		printf("ready\n");
		fflush(stdout);
		char c;
		while (read(0, &c, 1) > 0) {
		}
		return 0;
	}
	if (argc > 100)
		only();
	fprintf(stderr, "usage: swapper swap A B | swapper map FILE...\n");
	return 2;
}

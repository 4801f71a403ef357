/* gethost.c: the target of gethostlatency.bt (trace_tools_test.go). Built
 * at test time:
 *   gcc -O1 -g -o gethost gethost.c
 * It prints "ready" and answers each line on stdin with "done"; for a line
 * "go" it first calls getaddrinfo 3 times for "localhost" and 2 times for
 * "127.0.0.1" (IPv4, loopback only: the name is in /etc/hosts, the address
 * is numeric, nothing goes on the network; a machine without "localhost"
 * in /etc/hosts fails those lookups, on stderr, and both tracers still see
 * the calls). It exits at the end of stdin.
 * With the argument "go" (for -c) it does that work once, prints nothing
 * and exits. */
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

static void lookup(const char *name) {
	struct addrinfo hints, *res;
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_INET;
	hints.ai_socktype = SOCK_STREAM;
	int err = getaddrinfo(name, NULL, &hints, &res);
	if (err != 0) {
		/* stderr: under -c, stdout is the tracer's output, compared. */
		fprintf(stderr, "getaddrinfo %s: %s\n", name, gai_strerror(err));
		return;
	}
	freeaddrinfo(res);
}

static void work(void) {
	for (int i = 0; i < 3; i++)
		lookup("localhost");
	for (int i = 0; i < 2; i++)
		lookup("127.0.0.1");
}

int main(int argc, char **argv) {
	char line[64];
	if (argc > 1 && strcmp(argv[1], "go") == 0) {
		work();
		return 0;
	}
	printf("ready\n");
	fflush(stdout);
	while (fgets(line, sizeof line, stdin)) {
		if (strcmp(line, "go\n") != 0)
			goto answer;
		work();
	answer:
		printf("done\n");
		fflush(stdout);
	}
	return 0;
}

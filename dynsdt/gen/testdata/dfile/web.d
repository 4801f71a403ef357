// A web runtime's probes, in the shape of Node's src/node_provider.d once
// its translators and typedefs are removed: named parameters, pointers to
// structs the tracer knows, and the D view of the arguments after a colon.
#include <sys/types.h>

provider webrt {
	probe gc__start(int t, int f, void *isolate);
	probe gc__done(int t, int f, void *isolate);
	probe net__server__connection(struct conn *c,
	    const char *a, int p, int fd) : (conn_t *c, string a, int p, int fd);
	probe http__server__request(struct request *h, struct conn *c,
	    const char *a, int p, const char *m, const char *u,
	    int fd) : (request_t *h, conn_t *c, string a, int p, string m,
	    string u, int fd);
	probe http__client__response(struct conn *c, const char *a, int p, int fd);
};

#pragma D attributes Stable/Stable/Common provider webrt provider
#pragma D attributes Private/Private/Common provider webrt module

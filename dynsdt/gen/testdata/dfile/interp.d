/* A byte-code interpreter's probes, in the shape of CPython's
 * Include/pydtrace.d: const char * and int arguments, one void *,
 * a long, probes without arguments, and #pragma D attributes after the
 * provider. */

provider interp {
    probe function__entry(const char *, const char *, int);
    probe function__return(const char *, const char *, int);
    probe instance__new__start(const char *, const char *);
    probe instance__new__done(const char *, const char *);
    probe line(const char *, const char *, int);
    probe heap__collect__start(int);
    probe heap__collect__done(long);
    probe module__load__start(const char *);
    probe module__load__done(const char *, int);
    probe audit(const char *, void *);
    probe ready();
};

#pragma D attributes Evolving/Evolving/Standard provider interp provider
#pragma D attributes Evolving/Evolving/Standard provider interp module
#pragma D attributes Evolving/Evolving/Standard provider interp function
#pragma D attributes Evolving/Evolving/Standard provider interp name
#pragma D attributes Evolving/Evolving/Standard provider interp args

/* The static probes of the Go HTTP server example. main.go regenerates package
 * probes from this file with go generate (usdtkit gen --static -o probes --package
 * probes server.d).
 */
provider server {
	/* A request arrived: its URL path and the server's request id (1, 2, ...). */
	probe request__start(char *path, long id);
	/* The request was answered with HTTP status after nanos nanoseconds. */
	probe request__done(char *path, long id, int status, long nanos);
};

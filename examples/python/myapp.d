/* The probes of the Python ctypes example: generate the shared object with
 *	usdtkit gen -o . myapp.d
 */
provider myapp {
	probe request__start(char *path, int size);
	probe request__done(char *path, int status, long nanos);
};

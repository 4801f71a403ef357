// Package ldso finds a shared library by name as glibc's dynamic loader
// does, so that "libc" or "libssl.so.3" names a file to probe.
//
// ParseCache decodes /etc/ld.so.cache (old, new and compat layouts). Find
// turns a name into a path: cache entries for the machine first, then the
// standard directories; FindOptions.Root searches inside another root.
// RunPath reads a file's run paths.
//
// Errors: malformed cache data is a *FormatError with the byte offset;
// Find wraps ErrNotFound. Nothing allocates beyond the file's size. All
// functions are safe for concurrent use.
//
// Sources: glibc elf/cache.c, elf/dl-cache.c, sysdeps/generic/dl-cache.h;
// checked against ldconfig -p of glibc 2.36.
package ldso

// Package ldso finds a shared library by name the way glibc's dynamic
// loader (ld.so) does, so that "libc" or "libssl.so.3" can name the file to
// attach uprobes to.
//
// # Model
//
// [ParseCache] decodes /etc/ld.so.cache, the index ldconfig(8) builds of
// every library in the trusted directories: a list of [Entry] values
// {soname, path, flags, hwcap} in the loader's search order. Three layouts
// exist (glibc sysdeps/generic/dl-cache.h):
//
//   - old, magic "ld.so-1.7.0": 16-byte header, 12-byte entries, strings
//     indexed from the end of the entry array;
//   - new, magic "glibc-ld.so.cache1.1" (the default since glibc 2.32):
//     48-byte header with a byte-order flag, 24-byte entries, strings
//     indexed from the start of the header;
//   - compat: an old cache with a new one hidden at the start of its string
//     table (8-byte aligned). Like the loader, we then use the new part.
//
// The extension directory of the new format (generator string,
// glibc-hwcaps subdirectory names) is not decoded.
//
// [Find] turns a name into a path: it asks the cache for entries whose
// soname matches and whose flags fit the wanted machine, then lists the
// standard directories, and returns the first candidate that is a regular
// ELF file of that machine. See Find for the accepted name forms and the
// order among matches. [FindOptions.Root] runs the whole search inside
// another root such as /proc/PID/root.
//
// # Errors
//
// Malformed cache data gives a *[FormatError] with the byte offset of the
// bad field, so `xxd -s OFF /etc/ld.so.cache` shows it; no count read from
// the file allocates more than the file's size justifies. Find wraps
// [ErrNotFound] when nothing matches.
//
// # Sources
//
// glibc elf/cache.c (writer, ldconfig -p printer), elf/dl-cache.c (loader
// lookup, _dl_cache_check_flags), sysdeps/generic/dl-cache.h and
// ldconfig.h (layout and FLAG_* values); bcc's bcc_procutils_which_so for
// the short-name convention ("c" means libc). Checked against `ldconfig -p`
// and `ldconfig -c old|compat|new` output of glibc 2.36.
//
// All functions are safe for concurrent use and keep no state.
package ldso

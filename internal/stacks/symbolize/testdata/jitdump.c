// Build: gcc -O1 -o jitdump jitdump.c (the tests build it).
// It maps an anonymous executable page, as a JIT compiler does, writes a
// function into it that calls back into the program, and describes the
// page in a jitdump file (Linux perf's jitdump-specification.txt): the
// path in the environment variable JITDUMP, which it also maps executable
// as perf's JIT agents do, or else /tmp/jit-PID.dump, not mapped.
//
// Records: JIT_CODE_DEBUG_INFO for jit_hot (page+0 at hot.js:10, its
// call at page+0xe at hot.js:11), JIT_CODE_LOAD "jit_hot" at page+0 (the
// function), then
// JIT_CODE_LOAD "jit_cold" at page+0x100 (0x40 bytes). On "addrs" it calls
// jit_hot, whose callback saves its return address, and prints
// "NAME ADDRESS" lines: jit_hot, jit_cold, "ret" (the return address in
// jit_hot) and "callback" (the callback's address); then "done". On
// "more" it appends JIT_CODE_LOAD "jit_later" at page+0x200 and a
// JIT_CODE_MOVE of jit_cold to page+0x800, prints "jit_later ADDRESS" and
// "jit_cold_moved ADDRESS", then "done". At the end of its input it
// removes the file and exits.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static void *ret;

__attribute__((noinline)) void callback(void) { ret = __builtin_return_address(0); }

static uint64_t now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void u32(FILE *f, uint32_t v) { fwrite(&v, 4, 1, f); }
static void u64(FILE *f, uint64_t v) { fwrite(&v, 8, 1, f); }

// load writes a JIT_CODE_LOAD record of size bytes of code at addr.
static void load(FILE *f, const char *name, unsigned char *addr, uint64_t size, uint64_t index) {
	uint32_t total = 16 + 40 + strlen(name) + 1 + size;
	u32(f, 0), u32(f, total), u64(f, now());
	u32(f, getpid()), u32(f, getpid()), u64(f, (uint64_t)addr), u64(f, (uint64_t)addr), u64(f, size), u64(f, index);
	fwrite(name, strlen(name) + 1, 1, f);
	fwrite(addr, size, 1, f);
}

int main(void) {
	char line[256], path[256];
	setvbuf(stdout, NULL, _IOLBF, 0);
	unsigned char *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED)
		return 1;
	// jit_hot: push %rbp; mov %rsp,%rbp; movabs $callback,%rax;
	// call *%rax; pop %rbp; ret
	unsigned char code[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xd0, 0x5d, 0xc3};
	uint64_t cb = (uint64_t)callback;
	memcpy(code + 6, &cb, 8);
	memcpy(page, code, sizeof code);
	memset(page + 0x100, 0xc3, 0x40);
	const char *env = getenv("JITDUMP");
	if (env)
		snprintf(path, sizeof path, "%s", env);
	else
		snprintf(path, sizeof path, "/tmp/jit-%d.dump", getpid());
	FILE *f = fopen(path, "w+");
	if (!f)
		return 1;
	// The header: magic, version, total_size, elf_mach (x86-64), pad1,
	// pid, timestamp, flags.
	u32(f, 0x4A695444), u32(f, 1), u32(f, 40), u32(f, 62), u32(f, 0), u32(f, getpid()), u64(f, now()), u64(f, 0);
	// JIT_CODE_DEBUG_INFO: code_addr, nr_entry, then per entry
	// code_addr, line, discrim and the file name.
	u32(f, 2), u32(f, 16 + 16 + 2 * (16 + 7)), u64(f, now());
	u64(f, (uint64_t)page), u64(f, 2);
	u64(f, (uint64_t)page), u32(f, 10), u32(f, 0), fwrite("hot.js", 7, 1, f);
	u64(f, (uint64_t)page + 0xe), u32(f, 11), u32(f, 0), fwrite("hot.js", 7, 1, f);
	load(f, "jit_hot", page, sizeof code, 1);
	load(f, "jit_cold", page + 0x100, 0x40, 2);
	fflush(f);
	if (env && mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fileno(f), 0) == MAP_FAILED)
		return 1;
	while (fgets(line, sizeof line, stdin)) {
		if (line[0] == 'm') {  // "more"
			load(f, "jit_later", page + 0x200, 0x10, 3);
			memcpy(page + 0x800, page + 0x100, 0x40);
			// JIT_CODE_MOVE: pid, tid, vma, old_code_addr, new_code_addr,
			// code_size, code_index.
			u32(f, 1), u32(f, 16 + 48), u64(f, now());
			u32(f, getpid()), u32(f, getpid()), u64(f, (uint64_t)page + 0x800), u64(f, (uint64_t)page + 0x100), u64(f, (uint64_t)page + 0x800), u64(f, 0x40), u64(f, 2);
			fflush(f);
			printf("jit_later %p\n", (void *)(page + 0x200));
			printf("jit_cold_moved %p\n", (void *)(page + 0x800));
			printf("done\n");
			continue;
		}
		((void (*)(void))page)();
		printf("jit_hot %p\n", (void *)page);
		printf("jit_cold %p\n", (void *)(page + 0x100));
		printf("ret %p\n", ret);
		printf("callback %p\n", (void *)callback);
		printf("done\n");
	}
	fclose(f);
	unlink(path);
	return 0;
}

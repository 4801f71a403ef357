// Package bpfgen generates the BPF program that traces USDT probe sites:
// one program, built with cilium/ebpf's asm in Go (no clang, no kernel
// headers), serves every site of a trace session.
//
// # Model
//
// The data flows from the note to the event:
//
//	sdt.Arg (parsed spec at one location) ──Arg.Fetch──► Fetch
//	Site{Probe, Args []Fetch, Strings, Bytes}  (one per location; cookie = index)
//	Config{Sites, Mode, Filters, …} ──Generate──► ebpf.CollectionSpec
//	ring buffer record ──Config.DecodeEvent──► Event
//
// The caller attaches program "trace" to every site, with the site's index
// in Config.Sites as the attach cookie: one uprobe_multi link per file
// (Config.Multi, attach type AttachTraceUprobeMulti) or one classic uprobe
// link per site. The program reads the cookie with bpf_get_attach_cookie.
//
// # Program layout
//
//	header      R6 = ctx (pt_regs); R8 = cookie; cookie >= len(Sites)
//	            exits; R7 = the record: for ModeEvents reserved in the
//	            "events" ring buffer with bpf_ringbuf_reserve and built
//	            there in place (a full ring adds one to lost[0] and exits),
//	            otherwise on the stack (the tail only reads it)
//	dispatch    a balanced binary tree of "if cookie >= k" jumps over runs of
//	            cookies with the same probe and block: ceil(log2(runs))
//	            compares; each leaf stores the probe id and jumps to its block
//	blocks      one per distinct fetch list (sites with equal fetches, string
//	            and byte bits and, for ModeHist, signedness share one): each
//	            argument is read and stored, extended to 64 bits, in
//	            args[i] (a pointer chain reads each pointer into args[i]
//	            first); string arguments are then read with
//	            bpf_probe_read_user_str into their slot, byte strings with
//	            bpf_probe_read_user after their clamped length; then a jump
//	            to the tail
//	tail        the filters (a failing one exits, discarding a reserved
//	            record), then per mode:
//	            events:  time, pid/tid, cpu, comm, the constant header
//	                     fields, then bpf_ringbuf_submit
//	            count:   counts[{probe, pid, comm}] += 1, or with the
//	                     probe alone counts[probe] += 1 in a per-CPU
//	                     array (no hashing; the lookup is inlined)
//	            hist:    hist[{probe, log2 bucket of args[HistArg]}] += 1
//	            latency: starts[key] = now at LatencyStart; at
//	                     LatencyDone hist[{probe, bucket(now - start)}] += 1
//	                     and the start is deleted; key is pid_tgid, or
//	                     with LatencyByArg {args[LatencyArg], tgid}
//
// Registers R6..R9 survive helper calls; faults are collected in R9 without
// branches (a helper's negative result shifted right by 63 is 1), so a
// block's paths do not multiply in the verifier, and the verifier prunes at
// the tail. The two branches a pointer chain or byte string needs (a failed
// hop; the length clamp) meet again right after the argument with only R9,
// R8 (the cut bits of byte strings) and the record differing, none of them
// precise, so the verifier prunes there too; so a session of MaxSites (10000) sites with different fetch lists
// loads (2000 sites of up to 12 arguments: ~100k instructions, well under a
// second). Programs over 32000 instructions reach blocks and the tail with
// gotol (kernel 6.4+); the kernel caps a program at 1M instructions, which a
// Config with very many distinct 12-argument sites can exceed (Generate then
// returns a *ConfigError).
//
// # Argument semantics
//
// A register argument is the 8-byte pt_regs slot shifted right by Reg.Shift
// (%ah: 8), truncated to min(Size, Reg.Width) bytes and sign- (Signed) or
// zero-extended: -4@%eax with rax = 0xffffffff80000000 is -2147483648, 1@%ah
// with rax = 0x1234 is 0x12. A memory argument reads Size bytes with
// bpf_probe_read_user at base + index*Scale + Offset, where base is a
// register (its alias, zero-extended), the probe's instruction pointer
// (IPRel: symbol operands, see sdt's Arg.Fetch) or nothing (an absolute
// address), then extends them. A read that fails gives 0 and sets the
// argument's bit in Event.Faults. A constant is Value. Size 0 reads 8 bytes.
//
// A memory argument with Derefs > 0 is a pointer chain (s.next.count): at
// the address above an 8-byte pointer is read, Path[0] added, and so on
// for Derefs hops; the last address holds the Size bytes. A failed read or
// a NULL pointer on the way gives 0 and the fault bit.
//
// A byte string (Site.Bytes bit i, a Go string or slice) is the pointer in
// argument i and the length in argument BytesLen[i]: n = min(length,
// StrLen-2), compared unsigned, bytes are copied after a u16 count n, and
// the record's cut bit says the length was larger (or negative). NULs are
// data. A fault gives n = 0. Like strings, byte strings are read only in
// ModeEvents. bpf_probe_read_user cannot fault pages in: memory the target
// never touched (a string constant in a fresh .rodata page) reads as a
// fault.
//
// # Event record
//
// A record of one size per program (the verifier needs a constant
// reservation; see event.go for offsets), native byte order: a 56-byte
// header (time, pid, tid, cpu, probe, comm[16], nargs, version, faults,
// strs, slots, strlen, argcap, bytes, cut), args[argcap] as u64 where
// argcap is the most arguments of any site, then one StrLen-byte slot per
// argument that any site reads as a string or byte string. The header says how many argument slots and
// which string slots exist and how long they are, so DecodeEvent needs no
// site table. Two integer arguments make a 72-byte record; at most 32 KiB,
// and at most RingSize. The ring is not cleared between records: bytes the
// site does not write (args past nargs, string slots it does not read)
// hold older records and are not decoded. Record version 3 (version 2 had
// no byte strings; version 1 had a fixed args[12], 152 bytes before the
// strings, built in a per-CPU array and copied with bpf_ringbuf_output).
//
// # Cost
//
// BenchmarkHit attributes the time per hit with the kernel's BPF run time
// statistics (on this machine, Linux 6.18 in a VM): over a bare 16-byte
// ring buffer write, bpf_get_current_comm costs ~40 ns, bpf_ktime_get_ns
// ~35, pid_tgid, cookie and ring query ~5 each, and a bpf_probe_read_user
// ~70 (a memory argument such as seed(%rip)), a register argument ~3.
// Building the record in the ring instead of a per-CPU array (lookup, then a
// 152-byte copy) saves ~30-50 ns per event. Counting by probe alone (the
// per-CPU array) costs ~10-15 ns over an empty program; an update of a hash
// (counts by pid or comm, histograms) ~50-55 ns.
//
// # Wakeups and loss
//
// Records are submitted with BPF_RB_NO_WAKEUP while bpf_ringbuf_query
// reports at most a quarter of the ring filled, and with
// BPF_RB_FORCE_WAKEUP beyond: a reader must also poll on a timer
// (ringbuf.Reader.SetDeadline). Nothing is lost silently: a record the ring
// cannot reserve adds one to lost[0]
// (LostEvents), a failed update of "counts", "hist" or "starts" (a full map)
// to lost[1] (LostUpdates); both are per-CPU, read with ReadLost. A "starts"
// entry whose thread never reaches the done probe ages out of the LRU map.
//
// # Latency per goroutine
//
// Go moves goroutines between threads, so a function's entry and its
// return may run on different threads, and one thread runs many
// goroutines in turn. With LatencyByArg the "starts" key is {value of
// argument LatencyArg, tgid} (16 bytes): the goroutine id, fetched as an
// argument at both the start and the done sites (for a function's entry
// and its return instructions alike). A hit whose key argument faults is
// ignored. A recursive call overwrites its caller's start, as with
// per-thread keys.
//
// # Kernel versions
//
// bpf_probe_read_user{,_str}: 5.5. bpf_ringbuf_reserve, _submit, _discard
// and _query, ring buffer maps: 5.8. bpf_get_attach_cookie for
// uprobes (perf-event links): 5.15. uprobe_multi links and cookies: 6.6.
// gotol for programs over 32000 instructions: 6.4. BPF_ST with a 64-bit
// width and JMP32 compares: 5.1 or older. Uprobe reference counters
// (semaphores): 4.20 (perf) and 6.6 (uprobe_multi). The generated program
// declares license "GPL": the probe_read_user helpers are GPL-only.
//
// # Errors and concurrency
//
// Generate returns a *ConfigError naming the Config field it cannot use,
// wrapping ErrUnsupported when an argument cannot be read at all. DecodeEvent
// returns a *FormatError with the byte offset of a bad record. Kernel
// rejections come from ebpf.NewCollection (*ebpf.VerifierError). Generate,
// DecodeEvent and HistBucket keep no state and are safe for concurrent use;
// ReadCounts, ReadHist and ReadLost read maps the caller owns.
//
// # Sources
//
// Kernel: arch/x86/include/asm/ptrace.h (struct pt_regs),
// kernel/trace/bpf_trace.c bpf_probe_read_user_proto (ARG_CONST_SIZE_OR_ZERO:
// a byte string's size may be 0 but must be bounded),
// arch/arm64/include/uapi/asm/ptrace.h (struct user_pt_regs),
// kernel/events/uprobes.c handle_swbp ("change it in advance for
// ->handler() and restart": the ip is the probe address when handlers run)
// and arch/x86/kernel/uprobes.c sys_uprobe (ip = return address - 5),
// kernel/trace/bpf_trace.c (helpers for kprobe-type programs),
// include/uapi/linux/bpf.h (helper flags and semantics),
// kernel/bpf/ringbuf.c (reserve, commit and the wakeup flags).
// bpftrace's codegen createLog2Function for the hist() buckets. libbpf's
// usdt.c for the one-program, cookie-per-site design.
//
// # Usage
//
//	spec, err := bpfgen.Generate(&bpfgen.Config{Machine: elf.EM_X86_64, Sites: sites, Multi: true})
//	coll, err := ebpf.NewCollection(spec)
//	l, err := ex.UprobeMulti(nil, coll.Programs[bpfgen.ProgName], &link.UprobeMultiOptions{
//		Addresses: fileOffsets, Cookies: siteIndexes, RefCtrOffsets: semaphoreOffsets, PID: pid})
//	rd, err := ringbuf.NewReader(coll.Maps[bpfgen.MapEvents])
//	// for each record: cfg.DecodeEvent(rec.RawSample, &ev)
package bpfgen

package bpfgen

import (
	"debug/elf"
	"errors"
	"testing"
)

func TestConfigErrors(t *testing.T) {
	args := sampleArgs(t)
	good := func() Config {
		return Config{Machine: elf.EM_X86_64, Sites: []Site{{Probe: 1, Args: args[:3]}, {Probe: 2, Args: args[:1]}}}
	}
	tests := []struct {
		name        string
		edit        func(c *Config)
		field       string
		unsupported bool
	}{
		{"machine", func(c *Config) { c.Machine = elf.EM_RISCV }, "Machine", true},
		{"no sites", func(c *Config) { c.Sites = nil }, "Sites", false},
		{"too many sites", func(c *Config) { c.Sites = make([]Site, MaxSites+1) }, "Sites", false},
		{"too many args", func(c *Config) { c.Sites[0].Args = make([]Fetch, MaxArgs+1) }, "Sites[0].Args", false},
		{"strings past args", func(c *Config) { c.Sites[1].Strings = 1 << 1 }, "Sites[1].Strings", false},
		{"size 16", func(c *Config) { c.Sites[0].Args = []Fetch{{Kind: FetchMem, Size: 16}} }, "Sites[0].Args[0].Size", true},
		{"no kind", func(c *Config) { c.Sites[0].Args = []Fetch{{Size: 4}} }, "Sites[0].Args[0].Kind", false},
		{"reg offset", func(c *Config) { c.Sites[0].Args = []Fetch{{Kind: FetchReg, Reg: Reg{Off: 168, Width: 8}}} }, "Sites[0].Args[0].Reg.Off", false},
		{"reg unaligned", func(c *Config) { c.Sites[0].Args = []Fetch{{Kind: FetchReg, Reg: Reg{Off: 4, Width: 4}}} }, "Sites[0].Args[0].Reg.Off", false},
		{"reg width", func(c *Config) { c.Sites[0].Args = []Fetch{{Kind: FetchReg, Reg: Reg{Width: 3}}} }, "Sites[0].Args[0].Reg.Width", false},
		{"reg shift", func(c *Config) { c.Sites[0].Args = []Fetch{{Kind: FetchReg, Reg: Reg{Width: 8, Shift: 8}}} }, "Sites[0].Args[0].Reg.Shift", false},
		{"scale", func(c *Config) {
			c.Sites[0].Args = []Fetch{{Kind: FetchMem, HasIndex: true, Index: Reg{Width: 8}, Scale: 3}}
		}, "Sites[0].Args[0].Scale", false},
		{"iprel and base", func(c *Config) {
			c.Sites[0].Args = []Fetch{{Kind: FetchMem, IPRel: true, HasBase: true, Reg: Reg{Width: 8}}}
		}, "Sites[0].Args[0].IPRel", false},
		{"strlen small", func(c *Config) { c.StrLen = 1 }, "StrLen", false},
		{"strlen big", func(c *Config) { c.StrLen = MaxStrLen + 1 }, "StrLen", false},
		{"record too big", func(c *Config) {
			c.StrLen = MaxStrLen
			c.Sites[0].Args = make([]Fetch, MaxArgs)
			for i := range c.Sites[0].Args {
				c.Sites[0].Args[i] = Fetch{Kind: FetchConst}
			}
			c.Sites[0].Strings = 1<<MaxArgs - 1
		}, "StrLen", false},
		{"ring not power of two", func(c *Config) { c.RingSize = 3 << 20 }, "RingSize", false},
		{"ring too small", func(c *Config) { c.RingSize = 1024 }, "RingSize", false},
		{"record bigger than the ring", func(c *Config) {
			c.RingSize, c.StrLen, c.Sites[0].Strings = 4096, 2048, 0b111
		}, "RingSize", false},
		{"max entries", func(c *Config) { c.MaxEntries = -1 }, "MaxEntries", false},
		{"filter past a site's args", func(c *Config) { c.Filters = []Filter{{Arg: 1}} }, "Filters[0].Arg", false},
		{"filter negative arg", func(c *Config) { c.Filters = []Filter{{Arg: -1}} }, "Filters[0].Arg", false},
		{"filter op", func(c *Config) { c.Filters = []Filter{{Op: 9}} }, "Filters[0].Op", false},
		{"hist arg", func(c *Config) { c.Mode, c.HistArg = ModeHist, 2 }, "HistArg", false},
		{"count flags", func(c *Config) { c.Mode, c.CountBy = ModeCount, 4 }, "CountBy", false},
		{"mode", func(c *Config) { c.Mode = 9 }, "Mode", false},
		{"bytes past args", func(c *Config) { c.Sites[1].Bytes = 1 << 1 }, "Sites[1].Bytes", false},
		{"bytes and strings", func(c *Config) { c.Sites[0].Bytes, c.Sites[0].Strings = 0b110, 0b100 }, "Sites[0].Bytes", false},
		{"bytes length past args", func(c *Config) { c.Sites[0].Bytes, c.Sites[0].BytesLen[1] = 0b10, 3 }, "Sites[0].BytesLen[1]", false},
		{"derefs too many", func(c *Config) { c.Sites[0].Args = []Fetch{{Kind: FetchMem, Derefs: MaxDerefs + 1}} }, "Sites[0].Args[0].Derefs", false},
		{"derefs of a register", func(c *Config) {
			c.Sites[0].Args = []Fetch{{Kind: FetchReg, Reg: Reg{Width: 8}, Derefs: 1}}
		}, "Sites[0].Args[0].Derefs", false},
		{"path past derefs", func(c *Config) {
			c.Sites[0].Args = []Fetch{{Kind: FetchMem, Derefs: 2, Path: [MaxDerefs]int32{8, 16, 24}}}
		}, "Sites[0].Args[0].Path[2]", false},
		{"latency arg past a site's args", func(c *Config) { c.Mode, c.LatencyByArg, c.LatencyArg = ModeLatency, true, 1 }, "LatencyArg", false},
		{"latency arg negative", func(c *Config) { c.Mode, c.LatencyByArg, c.LatencyArg = ModeLatency, true, -1 }, "LatencyArg", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := good()
			tc.edit(&c)
			spec, err := Generate(&c)
			var ce *ConfigError
			if !errors.As(err, &ce) || spec != nil {
				t.Fatalf("have %v, %v; want a *ConfigError", spec, err)
			}
			if ce.Field != tc.field {
				t.Errorf("field %q, want %q (%v)", ce.Field, tc.field, err)
			}
			if errors.Is(err, ErrUnsupported) != tc.unsupported {
				t.Errorf("errors.Is(%v, ErrUnsupported) = %v, want %v", err, !tc.unsupported, tc.unsupported)
			}
		})
	}
	c := good()
	if _, err := Generate(&c); err != nil {
		t.Errorf("good config: %v", err)
	}
	// The new fields in valid use: BytesLen of an unset bit is ignored,
	// and LatencyArg is only checked with LatencyByArg.
	c = good()
	c.Sites[0].Args = append([]Fetch{{Kind: FetchMem, HasBase: true, Reg: Reg{Width: 8}, Derefs: MaxDerefs, Path: [MaxDerefs]int32{8, -8, 0, 1 << 20}}}, args[1:3]...)
	c.Sites[0].Bytes, c.Sites[0].BytesLen = 0b100, [MaxArgs]uint8{1: 99, 2: 1}
	c.Mode, c.LatencyArg = ModeLatency, 7
	if _, err := Generate(&c); err != nil {
		t.Errorf("good config with chains and bytes: %v", err)
	}
	c.LatencyByArg, c.LatencyArg = true, 0
	if _, err := Generate(&c); err != nil {
		t.Errorf("good config with LatencyByArg: %v", err)
	}
	if _, err := Generate(nil); err == nil {
		t.Error("nil config: no error")
	}
}

package dynsdt

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseProbeSpec(t *testing.T) {
	tests := []struct {
		in   string
		want ProbeSpec
		err  bool
	}{
		{in: "request__start:string,int32", want: ProbeSpec{Name: "request__start", Args: []ArgType{String, Int32}}},
		{in: "tick", want: ProbeSpec{Name: "tick"}},
		{in: "tick:", want: ProbeSpec{Name: "tick"}},
		{in: "all:int8,int16,int32,int64,uint8,uint16,uint32,uint64,bool,pointer,string,bytes",
			want: ProbeSpec{Name: "all", Args: []ArgType{Int8, Int16, Int32, Int64, Uint8, Uint16, Uint32, Uint64, Bool, Pointer, String, Bytes}}},
		{in: "x: int64 , string", want: ProbeSpec{Name: "x", Args: []ArgType{Int64, String}}},
		{in: "", err: true},
		{in: ":int64", err: true},
		{in: "a-b:int64", err: true},
		{in: "x:int", err: true},
		{in: "x:invalid", err: true},
		{in: "x:int64,", err: true},
		{in: "x:" + strings.Repeat("int8,", MaxArgs) + "int8", err: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			have, err := ParseProbeSpec(tt.in)
			if tt.err {
				if !errors.Is(err, ErrSpec) {
					t.Errorf("have %+v, %v; want an error wrapping ErrSpec", have, err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(have, tt.want) {
				t.Errorf("have %+v, %v; want %+v", have, err, tt.want)
			}
		})
	}
}

func FuzzParseProbeSpec(f *testing.F) {
	for _, s := range []string{"request__start:string,int32", "tick", "tick:", "x: int64 , bytes", "x:bool,pointer,uint8", ":int64", "x:int64,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		pr, err := ParseProbeSpec(s)
		if err != nil {
			if !errors.Is(err, ErrSpec) {
				t.Fatalf("have %v, want an error wrapping ErrSpec", err)
			}
			return
		}
		p := ProviderSpec{Name: "p", Probes: []ProbeSpec{pr}}
		if err := p.Validate(); err != nil {
			t.Fatalf("accepted an invalid probe: %v", err)
		}
		var types []string
		for _, a := range pr.Args {
			types = append(types, a.String())
		}
		again, err := ParseProbeSpec(pr.Name + ":" + strings.Join(types, ","))
		if err != nil || !reflect.DeepEqual(again, pr) {
			t.Fatalf("round trip: have %+v, %v; want %+v", again, err, pr)
		}
	})
}

package sdt

import (
	"slices"
	"testing"
)

func TestCompanions(t *testing.T) {
	tests := []struct {
		name string
		want []string
	}{
		{"python:function__entry", []string{"python:line"}},
		{"python:function__return", []string{"python:line"}},
		{"python:line", nil},
		{"python:gc__start", nil},
	}
	for _, tt := range tests {
		if have := Companions(tt.name); !slices.Equal(have, tt.want) {
			t.Errorf("Companions(%q) = %v, want %v", tt.name, have, tt.want)
		}
	}
}

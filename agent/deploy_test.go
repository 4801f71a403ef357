package agent_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/usdtkit/usdtkit/agent"
)

// TestDaemonSet parses deploy/daemonset.yaml: a ConfigMap whose
// agent.json ParseConfig accepts listening on loopback, and a privileged
// DaemonSet in the host's PID and network namespaces mounting /sys/fs/bpf and /proc.
func TestDaemonSet(t *testing.T) {
	f, err := os.Open("../deploy/daemonset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	var kinds []string
	for {
		var doc struct {
			Kind string            `yaml:"kind"`
			Data map[string]string `yaml:"data"`
			Spec struct {
				Template struct {
					Spec struct {
						HostPID     bool `yaml:"hostPID"`
						HostNetwork bool `yaml:"hostNetwork"`
						Containers  []struct {
							Args            []string `yaml:"args"`
							SecurityContext struct {
								Privileged bool `yaml:"privileged"`
							} `yaml:"securityContext"`
						} `yaml:"containers"`
						Volumes []struct {
							HostPath struct {
								Path string `yaml:"path"`
							} `yaml:"hostPath"`
						} `yaml:"volumes"`
					} `yaml:"spec"`
				} `yaml:"template"`
			} `yaml:"spec"`
		}
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatal(err)
		}
		kinds = append(kinds, doc.Kind)
		switch doc.Kind {
		case "ConfigMap":
			cfg, err := agent.ParseConfig([]byte(doc.Data["agent.json"]))
			if err != nil {
				t.Errorf("ConfigMap agent.json: %v", err)
			} else if host, _, err := net.SplitHostPort(cfg.Listen); err != nil || !net.ParseIP(host).IsLoopback() {
				t.Errorf("ConfigMap agent.json: listen %q, want the node's loopback", cfg.Listen)
			}
		case "DaemonSet":
			s := doc.Spec.Template.Spec
			if !s.HostPID || !s.HostNetwork || len(s.Containers) != 1 || !s.Containers[0].SecurityContext.Privileged ||
				!slices.Contains(s.Containers[0].Args, "agent") {
				t.Errorf("DaemonSet: have %+v, want hostPID, hostNetwork, one privileged container running agent", s)
			}
			var paths []string
			for _, v := range s.Volumes {
				paths = append(paths, v.HostPath.Path)
			}
			if !slices.Contains(paths, "/sys/fs/bpf") || !slices.Contains(paths, "/proc") {
				t.Errorf("DaemonSet host paths %q, want /sys/fs/bpf and /proc", paths)
			}
		}
	}
	if !slices.Equal(kinds, []string{"ConfigMap", "DaemonSet"}) {
		t.Errorf("kinds %q", kinds)
	}
}

// TestSystemdUnit checks deploy/usdtkit-agent.service's syntax (sections,
// KEY=VALUE lines) and that it runs the agent (usdtkit-agent, the
// program usdtkit agent runs) and reloads with SIGHUP.
func TestSystemdUnit(t *testing.T) {
	f, err := os.Open("../deploy/usdtkit-agent.service")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	section := regexp.MustCompile(`^\[[A-Za-z]+\]$`)
	keyval := regexp.MustCompile(`^[A-Za-z]+=.+$`)
	keys := map[string]string{}
	var sections []string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		l := strings.TrimSpace(sc.Text())
		switch {
		case l == "" || strings.HasPrefix(l, "#"):
		case section.MatchString(l):
			sections = append(sections, l)
		case keyval.MatchString(l) && len(sections) > 0:
			k, v, _ := strings.Cut(l, "=")
			keys[sections[len(sections)-1]+k] = v
		default:
			t.Errorf("line %d: %q is neither a section nor KEY=VALUE", n, l)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sections, []string{"[Unit]", "[Service]", "[Install]"}) {
		t.Errorf("sections %q", sections)
	}
	if !strings.Contains(keys["[Service]ExecStart"], "/usdtkit-agent --config ") || !strings.Contains(keys["[Service]ExecReload"], "-HUP") {
		t.Errorf("ExecStart %q, ExecReload %q", keys["[Service]ExecStart"], keys["[Service]ExecReload"])
	}
}

// TestNetworkPolicy parses deploy/networkpolicy.yaml: a NetworkPolicy
// selecting the DaemonSet's pods that admits ingress to port 9435 only
// from the pods it names.
func TestNetworkPolicy(t *testing.T) {
	b, err := os.ReadFile("../deploy/networkpolicy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var np struct {
		Kind string `yaml:"kind"`
		Spec struct {
			PodSelector struct {
				MatchLabels map[string]string `yaml:"matchLabels"`
			} `yaml:"podSelector"`
			PolicyTypes []string `yaml:"policyTypes"`
			Ingress     []struct {
				From  []map[string]any `yaml:"from"`
				Ports []struct {
					Port int `yaml:"port"`
				} `yaml:"ports"`
			} `yaml:"ingress"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal(b, &np); err != nil {
		t.Fatal(err)
	}
	s := np.Spec
	if np.Kind != "NetworkPolicy" || s.PodSelector.MatchLabels["app"] != "usdtkit-agent" ||
		!slices.Equal(s.PolicyTypes, []string{"Ingress"}) || len(s.Ingress) != 1 ||
		len(s.Ingress[0].From) == 0 || len(s.Ingress[0].Ports) != 1 || s.Ingress[0].Ports[0].Port != 9435 {
		t.Errorf("have %+v, want a NetworkPolicy of app=usdtkit-agent admitting named pods to port 9435 only", np)
	}
}

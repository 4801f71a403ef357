package agent_test

import (
	"fmt"
	"os"

	"github.com/usdtkit/usdtkit/agent"
)

// A config names programs and the processes they run in.
func ExampleParseConfig() {
	cfg, err := agent.ParseConfig([]byte(`{
	  "programs": [{
	    "name": "web",
	    "source": "usdt::app:request { @requests[str(arg0)] = count(); }",
	    "targets": [{"binary": "/usr/bin/app"}, {"comm": "app-worker"}]
	  }]
	}`))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	for _, p := range cfg.Programs {
		fmt.Println(p.Name, len(p.Targets), "targets")
	}
	// Output: web 2 targets
}

package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/usdtkit/usdtkit/agent"
)

type agentOptions struct {
	config    string
	listen    string
	webConfig string
}

// newAgentCmd is the whole command line of usdtkit-agent, named as users
// type it: usdtkit agent.
func newAgentCmd() *cobra.Command {
	var o agentOptions
	cmd := &cobra.Command{
		Use:           "usdtkit agent --config FILE",
		SilenceErrors: true,
		SilenceUsage:  true,
		Short:         "Run programs in every matching process and export their maps to Prometheus",
		Long: `Run the programs of a config file for a long time in every process their
targets select (an executable, a comm, a mapped library, a dynsdt provider),
attaching to processes that start or load objects later and detaching from
those that exit, and serve the programs' maps as Prometheus metrics on
http://LISTEN/metrics. SIGHUP reloads the config (the metrics start over).

The config is JSON; see the README or "go doc github.com/usdtkit/usdtkit/agent.Config".
Warnings (a process the program could not attach to) go to stderr.`,
		Example: `  sudo usdtkit agent --config /etc/usdtkit/agent.json
  sudo usdtkit agent --config agent.json --listen :9435`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAgent(cmd, &o)
		},
	}
	// cobra names the help flag after Use's first word.
	cmd.Flags().BoolP("help", "h", false, "help for usdtkit agent")
	cmd.Flags().StringVar(&o.config, "config", "", "the config file (JSON); required")
	cmd.Flags().StringVar(&o.listen, "listen", "", "address of /metrics, or unix:PATH for a Unix socket; default: the config's listen, else "+agent.DefaultListen)
	cmd.Flags().StringVar(&o.webConfig, "web.config.file", "", "the Prometheus exporters' web config (YAML): TLS, basic auth")
	return cmd
}

func runAgent(cmd *cobra.Command, o *agentOptions) error {
	if o.config == "" {
		return fmt.Errorf("--config is required")
	}
	cfg, err := agent.LoadConfig(o.config)
	if err != nil {
		return err
	}
	stderr := cmd.ErrOrStderr()
	warn := func(err error) { fmt.Fprintf(stderr, "usdtkit agent: %v\n", err) }
	a, err := agent.New(cfg, &agent.Options{Warn: warn, WebConfigFile: o.webConfig})
	if err != nil {
		return err
	}
	addr := o.listen
	if addr == "" {
		addr = cfg.Listen
	}
	if addr == "" {
		addr = agent.DefaultListen
	}
	ln, err := agent.Listen(addr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	if ln.Addr().Network() == "unix" {
		fmt.Fprintf(stderr, "usdtkit agent: serving /metrics on unix:%s\n", ln.Addr())
	} else {
		fmt.Fprintf(stderr, "usdtkit agent: serving http://%s/metrics\n", ln.Addr())
	}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				cfg, err := agent.LoadConfig(o.config)
				if err == nil {
					err = a.Reload(cfg)
				}
				if err != nil {
					warn(fmt.Errorf("reload: %w (keeping the running config)", err))
				} else {
					fmt.Fprintf(stderr, "usdtkit agent: reloaded %s\n", o.config)
				}
			}
		}
	}()
	return a.Serve(ctx, ln)
}

// Command baton is the Baton queue server and its command-line tools.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/baton-sqs/baton/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main{Stdout: os.Stdout, Stderr: os.Stderr}.Run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/spf13/cobra"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run executes one kcleanup invocation and returns its exit code. It is main without the
// process: tests call it with their own arguments and buffers. Results go to stdout; errors,
// hints and help for a wrong command line go to stderr.
//
// Ctrl-C or SIGTERM cancels the command's context (cmd.Context()); commands must honour it.
func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	return execute(ctx, newRootCmd(), args, stdout, stderr)
}

// execute runs root with args and returns the exit code, printing any error to stderr.
func execute(ctx context.Context, root *cobra.Command, args []string, stdout, stderr io.Writer) (code int) {
	// A panic would make the Go runtime exit with status 2, which here means "usage error" and
	// would mislead a script. Report it as an internal error instead. (Panics in other
	// goroutines cannot be caught here; commands must not let them happen.)
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "Error: internal error (a bug in kcleanup, please report it): %v\n%s", r, debug.Stack())
			code = exitError
		}
	}()

	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetIn(os.Stdin)
	if err := root.ExecuteContext(ctx); err != nil {
		printError(stderr, err)
		return exitCode(err)
	}
	return exitOK
}

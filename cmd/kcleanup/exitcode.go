package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/cockroachdb/errors"
)

// Exit codes. They are part of the CLI's contract with scripts: never renumber them.
const (
	exitOK      = 0 // success
	exitError   = 1 // the command ran and failed (Kafka unreachable, bad file, ...)
	exitUsage   = 2 // the command line is wrong: unknown command or flag, bad value, missing argument
	exitRefused = 3 // validation refused: the request is well formed but kcleanup will not do it
	// exitCannotTell: the recovery gate could not prove that restoring is safe (cluster
	// unreachable, control topic unreadable or unsafe, projection not caught up, degraded or at
	// risk). Unlike 3, another recovery point would not help: fix the cause and ask again.
	exitCannotTell = 4
)

// exitCodesHelp is appended to the root command's help text, so the codes are documented where
// an operator looks first.
const exitCodesHelp = `Exit codes:
  0  success
  1  error (the command ran and failed)
  2  usage (unknown command or flag, bad flag value, missing argument)
  3  refused: restoring is proved unsafe, or the request does not fit (e.g. a recovery point
     older than the committed boundary, or whose records are deleted)
  4  cannot tell: validate could not prove the recovery point safe (cluster unreachable,
     control topic missing, unreadable or unsafe, projection not caught up or degraded)`

// Sentinels that classify an error for the exit code. They are attached with errors.Mark, so the
// message of the marked error is unchanged and the mark survives any later wrapping.
// Their messages must stay unique: cockroachdb/errors compares sentinels by message.
var (
	errUsage      = errors.New("kcleanup: usage error (exit 2)")
	errRefused    = errors.New("kcleanup: refused by validation (exit 3)")
	errCannotTell = errors.New("kcleanup: the recovery gate cannot tell (exit 4)")
)

// usageError marks err as a mistake in the command line (exit code 2). nil stays nil.
func usageError(err error) error {
	if err == nil {
		return nil
	}
	return errors.Mark(err, errUsage)
}

// refusedError marks err as a refusal by validation (exit code 3): the input was understood, and
// the answer is no. nil stays nil.
func refusedError(err error) error {
	if err == nil {
		return nil
	}
	return errors.Mark(err, errRefused)
}

// cannotTellError marks err as the recovery gate's "cannot tell" (exit code 4): safety could not
// be proved either way. nil stays nil.
func cannotTellError(err error) error {
	if err == nil {
		return nil
	}
	return errors.Mark(err, errCannotTell)
}

// exitCode maps an error returned by a command to the process exit code. A usage mark wins over a
// refusal mark: a command line that could not be understood never got as far as validation.
func exitCode(err error) int {
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errUsage):
		return exitUsage
	case errors.Is(err, errRefused):
		return exitRefused
	case errors.Is(err, errCannotTell):
		return exitCannotTell
	default:
		return exitError
	}
}

// printError writes err as the operator sees it: one "Error:" line, then one "Hint:" line per
// hint attached anywhere in the chain (errors.WithHint), in the order they were attached.
// Continuation lines of a multi-line message or hint are indented under the text.
func printError(w io.Writer, err error) {
	fmt.Fprintf(w, "Error: %s\n", indentContinuation(err.Error(), "       "))
	for _, h := range errors.GetAllHints(err) {
		fmt.Fprintf(w, "Hint: %s\n", indentContinuation(h, "      "))
	}
}

func indentContinuation(s, indent string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+indent)
}

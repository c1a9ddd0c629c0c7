package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/cockroachdb/errors"
)

// Exit codes. They are part of the CLI's contract with scripts: never renumber them. 3 and 4
// belong to the recovery gate (kcleanup validate) alone, so that a pipeline can tell "do not
// restore this" from "the gate cannot answer now" from "something is broken" (1).
const (
	exitOK      = 0 // success
	exitError   = 1 // the command ran and failed (Kafka unreachable, bad file, a refused plan or mirror, ...)
	exitUsage   = 2 // the command line is wrong: unknown command or flag, bad value, missing argument
	exitRefused = 3 // the recovery gate proved restoring the recovery point unsafe
	// exitCannotTell: the recovery gate could not prove that restoring is safe (cluster
	// unreachable, control topic unreadable or unsafe, projection not caught up, degraded or at
	// risk). Unlike 3, another recovery point would not help: fix the cause and ask again.
	exitCannotTell = 4
	// exitInterrupted: Ctrl-C or SIGTERM stopped the command before it finished (128 + SIGINT,
	// as shells report it). The error says what was and was not written.
	exitInterrupted = 130
)

// exitCodes is the contract, in the words --help, README.md and docs/operator-guide.md use:
// TestExitCodesAgreeEverywhere checks that each documents exactly these codes with these words.
var exitCodes = []struct {
	code int
	word string // the name of the code, the same everywhere
	help string // what --help says after the word
}{
	{exitOK, "success", ""},
	{exitError, "error", "the command ran and failed (a plan or mirror that does not fit, an unreachable cluster, a bad file)"},
	{exitUsage, "usage", "unknown command or flag, bad flag value, missing argument, a flag given blank"},
	{exitRefused, "refused", "kcleanup validate only: the recovery gate proved restoring the recovery point unsafe (its records are deleted, or below the committed boundary)"},
	{exitCannotTell, "cannot tell", "kcleanup validate only: the recovery gate could not prove the recovery point safe (cluster unreachable, control topic missing, unreadable or unsafe, projection not caught up, degraded or at risk)"},
	{exitInterrupted, "interrupted", "Ctrl-C or SIGTERM stopped the command; it says what was and was not written"},
}

// exitCodesHelp is appended to the root command's help text, so the codes are documented where
// an operator looks first.
var exitCodesHelp = func() string {
	var b strings.Builder
	b.WriteString("Exit codes:")
	for _, c := range exitCodes {
		text := c.word
		if c.help != "" {
			text += ": " + c.help
		}
		fmt.Fprintf(&b, "\n%5d  %s", c.code, wrap(text, 93, "\n       "))
	}
	return b.String()
}()

// wrap breaks s at spaces into lines of at most width bytes (a longer word stays whole), joined
// by sep.
func wrap(s string, width int, sep string) string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && len(line)+1+len(w) > width {
			lines, line = append(lines, line), ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return strings.Join(append(lines, line), sep)
}

// Sentinels that classify an error for the exit code. They are attached with errors.Mark, so the
// message of the marked error is unchanged and the mark survives any later wrapping.
// Their messages must stay unique: cockroachdb/errors compares sentinels by message.
var (
	errUsage      = errors.New("kcleanup: usage error (exit 2)")
	errRefused    = errors.New("kcleanup: refused by the recovery gate (exit 3)")
	errCannotTell = errors.New("kcleanup: the recovery gate cannot tell (exit 4)")
	// errInterrupted: Ctrl-C or SIGTERM stopped the command (globalOptions.explain).
	errInterrupted = errors.New("kcleanup: interrupted (exit 130)")
)

// usageError marks err as a mistake in the command line (exit code 2). nil stays nil.
func usageError(err error) error {
	if err == nil {
		return nil
	}
	return errors.Mark(err, errUsage)
}

// refusedError marks err as a refusal by the recovery gate (exit code 3): restoring the recovery
// point is proved unsafe. Only kcleanup validate uses it. nil stays nil.
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
	case errors.Is(err, errInterrupted):
		return exitInterrupted
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

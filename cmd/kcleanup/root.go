package main

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/agnivade/levenshtein"
	"github.com/cockroachdb/errors"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// newRootCmd builds the whole command tree. Every subcommand is registered here, one builder per
// command; each builder receives the shared *globalOptions, which is filled in before the
// command's RunE runs (see installPreflight).
func newRootCmd() *cobra.Command {
	g := &globalOptions{}
	// In the order they should appear in --help.
	return buildRoot(g,
		newInitCmd(g),
		newDoctorCmd(g),
		newMarkersCmd(g),
		newPlanCmd(g),
		newSubmitCmd(g),
		newApplyCmd(g),
		newAdoptCmd(g),
		newMirrorCmd(g),
		newPinCmd(g),
		newUnpinCmd(g),
		newTombstonesCmd(g),
		newRetentionCmd(g),
		newStatusCmd(g),
		newHistoryCmd(g),
		newValidateCmd(g),
		newDemoCmd(g),
		newWorkerCmd(g),
		newVersionCmd(g),
	)
}

// buildRoot makes the root command with the given subcommands (built with the same g) and
// installs the preflight on the finished tree. Tests use it to run made-up commands in the real
// frame.
func buildRoot(g *globalOptions, subcommands ...*cobra.Command) *cobra.Command {
	root := &cobra.Command{
		Use:   "kcleanup",
		Short: "Reclaim the old prefix of a Kafka topic without deleting records a recovery point needs",
		Long: `kcleanup records a per-partition cleanup boundary on a compacted control topic before
anything is deleted, deletes older records with Kafka's DeleteRecords, and refuses recovery
points older than the boundary.

Global flags may be given before or after the command. Each has an environment fallback;
precedence is flag, then KCLEANUP_* environment variable, then default. Each command's own
flags, with examples: kcleanup <command> --help. The workflow and every error: docs/operator-guide.md.

` + exitCodesHelp,
		Version:                    currentVersion().oneLine(),
		SilenceUsage:               true,
		SilenceErrors:              true,
		SuggestionsMinimumDistance: 2,
	}
	root.SetVersionTemplate("{{.Version}}\n")
	addGlobalFlags(root)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError(errors.WithHint(unknownFlag(c, err), helpHint(c)))
	})
	root.AddCommand(subcommands...)
	// Cobra's help and completion commands are made here rather than at Execute time, so that
	// the walk below gives them the same exit codes and hints as every other command.
	root.SetHelpCommand(newHelpCmd())
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "help" || c.Name() == "completion" {
			needsNoGlobals(c)
		}
	}
	installPreflight(root, g)
	return root
}

// annotationNoGlobals marks a command that uses none of the global options, so that it works
// even when a KCLEANUP_* variable is invalid (help, completion).
const annotationNoGlobals = "kcleanup-no-globals"

// needsNoGlobals marks c and its subcommands with annotationNoGlobals.
func needsNoGlobals(c *cobra.Command) {
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[annotationNoGlobals] = "true"
	for _, sub := range c.Commands() {
		needsNoGlobals(sub)
	}
}

// newHelpCmd replaces cobra's help command, which prints the usage and exits 0 for a topic that
// does not exist: a mistyped command name is a usage error here as everywhere.
func newHelpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Long:  "help prints the help of a command, the same as kcleanup <command> --help.",
		Args:  cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			cmd, rest, err := c.Root().Find(args)
			if err != nil || len(rest) > 0 {
				return usageError(errors.WithHint(errors.Newf("unknown help topic %q", strings.Join(args, " ")),
					"run 'kcleanup --help' for the list of commands"))
			}
			cmd.InitDefaultHelpFlag()
			return cmd.Help()
		},
	}
}

// installPreflight walks the finished command tree (so it must run after every AddCommand) and
// gives each command the checks that make a bad command line exit 2 before anything runs:
//
//   - positional arguments are validated by the command's Args (cobra.NoArgs when unset);
//   - required flags and flag groups are checked here, not later by cobra, so that their
//     errors too are usage errors;
//   - the global options are resolved into *g.
//
// All of this runs as cobra's Args validator, which cobra calls after parsing flags and before
// any hook or RunE. A command with subcommands and no RunE of its own (root, or a group) reports
// a missing or unknown subcommand as a usage error instead of cobra's silent help.
// Cobra's help and completion commands are part of the walk (buildRoot makes them first); they
// skip the global options (annotationNoGlobals), so they work even when a KCLEANUP_* variable is
// invalid.
func installPreflight(cmd *cobra.Command, g *globalOptions) {
	if cmd.HasSubCommands() && cmd.RunE == nil && cmd.Run == nil {
		cmd.Args = unknownSubcommand
		cmd.RunE = missingSubcommand
	}
	args := cmd.Args
	if args == nil {
		args = cobra.NoArgs
	}
	cmd.Args = func(c *cobra.Command, a []string) error {
		if err := args(c, a); err != nil {
			if errors.Is(err, errUsage) { // already explained, e.g. by unknownSubcommand
				return err
			}
			return usageError(errors.WithHint(err, helpHint(c)))
		}
		if err := c.ValidateRequiredFlags(); err != nil {
			return usageError(errors.WithHint(err, helpHint(c)))
		}
		if err := c.ValidateFlagGroups(); err != nil {
			return usageError(errors.WithHint(err, helpHint(c)))
		}
		if err := blankFlag(c); err != nil {
			return err
		}
		if c.Annotations[annotationNoGlobals] != "" {
			return nil
		}
		resolved, err := resolveGlobals(c)
		if err != nil {
			return err
		}
		*g = resolved
		return nil
	}
	// Every error a command returns is worded by what stopped it (interrupt.go): Ctrl-C, the
	// --timeout, an unreachable cluster.
	if run := cmd.RunE; run != nil {
		cmd.RunE = func(c *cobra.Command, a []string) error {
			return g.explain(c.Context(), run(c, a))
		}
	}
	for _, sub := range cmd.Commands() {
		installPreflight(sub, g)
	}
}

// unknownSubcommand is the Args validator of a command that only groups subcommands: any
// positional argument left over is a subcommand that does not exist.
func unknownSubcommand(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	err := errors.Newf("unknown command %q for %q", args[0], c.CommandPath())
	if s := c.SuggestionsFor(args[0]); len(s) > 0 {
		err = errors.WithHintf(err, "did you mean %s?", quoteJoin(s))
	}
	return usageError(errors.WithHint(err, helpHint(c)))
}

// missingSubcommand runs for a group command given no subcommand: like `go`, print the usage to
// stderr (stdout is for results) and exit 2.
func missingSubcommand(c *cobra.Command, _ []string) error {
	c.SetOut(c.ErrOrStderr())
	_ = c.Usage()
	return usageError(errors.WithHintf(errors.Newf("missing command for %q", c.CommandPath()),
		"give one of the commands listed above; '%s <command> --help' shows its flags", c.CommandPath()))
}

// annotationBlankAllowed marks a flag whose blank value means something (--http-addr "" turns
// the HTTP API off). Every other flag given explicitly with a blank value is a usage error: an unset shell
// variable (--plan "$ID") must not silently turn into "every plan" or "no recovery point".
const annotationBlankAllowed = "kcleanup-blank-allowed"

// allowBlank marks flag name of fs with annotationBlankAllowed.
func allowBlank(fs *pflag.FlagSet, name string) {
	_ = fs.SetAnnotation(name, annotationBlankAllowed, []string{"true"})
}

// blankFlag returns a usage error for the first flag of c given on the command line with a
// blank value (or, for a list flag, a blank item), unless the flag allows it.
func blankFlag(c *cobra.Command) error {
	var blank *pflag.Flag
	c.Flags().Visit(func(f *pflag.Flag) { // only the flags given on the command line
		if blank != nil || f.Annotations[annotationBlankAllowed] != nil {
			return
		}
		var values []string
		switch v := f.Value.(type) {
		case pflag.SliceValue:
			if values = v.GetSlice(); len(values) == 0 {
				values = []string{""}
			}
		default:
			if f.Value.Type() != "string" {
				return
			}
			values = []string{f.Value.String()}
		}
		for _, s := range values {
			if strings.TrimSpace(s) == "" {
				blank = f
				return
			}
		}
	})
	if blank == nil {
		return nil
	}
	name, usage := pflag.UnquoteUsage(blank)
	what := "--" + blank.Name
	if name != "" {
		what += " " + strings.ToUpper(name)
	}
	next := "give it a value or leave it out"
	if blank.Annotations[cobra.BashCompOneRequiredFlag] != nil {
		next = "give it a value"
	}
	return usageError(errors.WithHintf(errors.Newf("--%s is given but blank", blank.Name),
		"%s: %s; %s (%s)", what, usage, next, helpHint(c)))
}

// unknownFlag words pflag's "unknown flag: --outt" as "unknown flag --outt: did you mean --out?"
// when c has flags (its own or global) close to the name: at most 2 edits away, or one name a
// prefix of the other. Any other error is returned as it is.
func unknownFlag(c *cobra.Command, err error) error {
	var ne *pflag.NotExistError
	if !errors.As(err, &ne) || ne.GetSpecifiedShortnames() != "" {
		return err // not an unknown long flag (a shorthand is one letter: nothing to suggest)
	}
	typed := ne.GetSpecifiedName()
	if s := flagSuggestions(c, typed); len(s) > 0 {
		return errors.Newf("unknown flag --%s: did you mean %s?", typed, strings.Join(s, " or "))
	}
	return err
}

// flagSuggestions lists the visible flags of c (local and inherited) whose names are close to
// typed, closest first.
func flagSuggestions(c *cobra.Command, typed string) []string {
	type near struct {
		name string
		dist int
	}
	var found []near
	seen := map[string]bool{}
	visit := func(f *pflag.Flag) {
		if f.Hidden || seen[f.Name] {
			return
		}
		seen[f.Name] = true
		d := levenshtein.ComputeDistance(strings.ToLower(typed), f.Name)
		if d <= 2 || strings.HasPrefix(f.Name, typed) || strings.HasPrefix(typed, f.Name) {
			found = append(found, near{f.Name, d})
		}
	}
	c.LocalFlags().VisitAll(visit)
	c.InheritedFlags().VisitAll(visit)
	slices.SortStableFunc(found, func(a, b near) int { return cmp.Compare(a.dist, b.dist) })
	out := make([]string, 0, len(found))
	for _, n := range found {
		out = append(out, "--"+n.name)
	}
	return out
}

func helpHint(c *cobra.Command) string {
	return fmt.Sprintf("run '%s --help' for usage", c.CommandPath())
}

func quoteJoin(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, " or ")
}

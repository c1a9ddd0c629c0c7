package main

import (
	"fmt"
	"io"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version can be set at link time (-ldflags "-X main.version=v1.2.3"); otherwise it comes from
// the module version in the binary's build info.
var version = ""

// versionInfo is what `kcleanup version` prints.
type versionInfo struct {
	Version    string `json:"version"`
	GoVersion  string `json:"goVersion"`
	Commit     string `json:"commit,omitempty"`
	CommitTime string `json:"commitTime,omitempty"`
	Modified   bool   `json:"modified,omitempty"` // built from a work tree with uncommitted changes
}

func newVersionCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the kcleanup version",
		RunE: func(cmd *cobra.Command, _ []string) error {
			bi, ok := debug.ReadBuildInfo()
			return printVersion(cmd.OutOrStdout(), g.output, versionFrom(version, bi, ok))
		},
	}
}

// versionFrom is pure so that it can be tested with made-up build infos.
func versionFrom(linked string, bi *debug.BuildInfo, ok bool) versionInfo {
	v := versionInfo{Version: linked}
	if !ok || bi == nil {
		if v.Version == "" {
			v.Version = "unknown"
		}
		return v
	}
	v.GoVersion = bi.GoVersion
	if v.Version == "" {
		v.Version = bi.Main.Version
	}
	if v.Version == "" {
		v.Version = "(devel)"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.time":
			v.CommitTime = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func printVersion(w io.Writer, format outputFormat, v versionInfo) error {
	if format == outputJSON {
		return writeJSON(w, v)
	}
	tw := newTable(w)
	fmt.Fprintf(tw, "version\t%s\n", v.Version)
	if v.GoVersion != "" {
		fmt.Fprintf(tw, "go\t%s\n", v.GoVersion)
	}
	if v.Commit != "" {
		modified := ""
		if v.Modified {
			modified = " (modified)"
		}
		fmt.Fprintf(tw, "commit\t%s%s\n", v.Commit, modified)
	}
	if v.CommitTime != "" {
		fmt.Fprintf(tw, "commit time\t%s\n", v.CommitTime)
	}
	return tw.Flush()
}

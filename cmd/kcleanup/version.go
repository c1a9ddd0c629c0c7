package main

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// version and commit are set at link time by `make build` (-ldflags "-X main.version=v1.2.3
// -X main.commit=<git commit>"); otherwise they come from the binary's build info (the module
// version, and vcs.revision, which `go build` stamps in a git checkout unless -buildvcs=false).
var version, commit = "", ""

// currentVersion is the version of this binary.
func currentVersion() versionInfo {
	bi, ok := debug.ReadBuildInfo()
	v := versionFrom(version, bi, ok)
	if v.Commit == "" {
		v.Commit = commit
	}
	return v
}

// oneLine is the version as `kcleanup --version` prints it.
func (v versionInfo) oneLine() string {
	s := "kcleanup " + v.Version
	var more []string
	if v.Commit != "" {
		c := "commit " + v.Commit
		if v.Modified {
			c += " (modified)"
		}
		more = append(more, c)
	}
	if v.GoVersion != "" {
		more = append(more, v.GoVersion)
	}
	if len(more) > 0 {
		s += " (" + strings.Join(more, ", ") + ")"
	}
	return s
}

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
		Long: `version prints the kcleanup version, the commit it was built from and the Go version
(kcleanup --version prints the same on one line).`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return printVersion(cmd.OutOrStdout(), g.output, currentVersion())
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

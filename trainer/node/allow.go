package node

import (
	"path/filepath"
	"strings"
)

// The commands a node runs come from job specs, and anyone who may start a workflow in the
// namespace writes those: so a node runs only what its operator allowed, configured on the
// node (never in the spec). An entry is a command prefix, its words split at white space,
// each word a path.Match pattern: "/opt/train/run.sh" allows that script with any arguments,
// "python3 -m my_trainer" that module only, "/opt/train/*" any program of that directory.
// An interpreter alone ("python3") allows anything it can run: allow a wrapper or a module.

// commandAllowed reports whether argv starts with the words of one of allowed's entries.
func commandAllowed(argv []string, allowed []string) bool {
	for _, entry := range allowed {
		words := strings.Fields(entry)
		if len(words) == 0 || len(words) > len(argv) {
			continue
		}
		ok := true
		for i, w := range words {
			if m, err := filepath.Match(w, argv[i]); err != nil || !m {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// unsafeEnv names a spec environment variable that would change which program an allowed
// command runs, or what it loads, behind the allowlist's back.
func unsafeEnv(name string) bool {
	up := strings.ToUpper(name)
	return up == "PATH" || strings.HasPrefix(up, "LD_") || strings.HasPrefix(up, "DYLD_")
}

// checkCommand refuses a command trainer this node does not allow.
func checkCommand(argv []string, env map[string]string, allowed []string) error {
	if len(allowed) == 0 {
		return badAssignment("this node runs no command trainers: its operator allows none " +
			"(start the node agent with --allow-command PROGRAM for each program jobs may run)")
	}
	if len(argv) == 0 || !commandAllowed(argv, allowed) {
		return badAssignment("command %q is not among the commands this node allows (%s)", argv, strings.Join(allowed, "; "))
	}
	for name := range env {
		if unsafeEnv(name) {
			return badAssignment("trainer.env sets %s, which would change what an allowed command runs: set it on the node instead", name)
		}
	}
	return nil
}

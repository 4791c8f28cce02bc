package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// machine describes where the benchmark ran, so a number is never quoted without its hardware.
type machine struct {
	CPU        string `json:"cpu"`
	Cores      int    `json:"cores"`
	MemoryGiB  int    `json:"memory_gib"`
	Device     string `json:"device"`
	FileSystem string `json:"file_system"`
	MountOpts  string `json:"mount_options"`
	Kernel     string `json:"kernel"`
	Go         string `json:"go"`
	LoadStart  string `json:"load_average_start"` // other work on the machine skews every number
	LoadEnd    string `json:"load_average_end"`
}

// loadAverage is the 1, 5 and 15 minute load averages.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func describeMachine(dir string) machine {
	m := machine{CPU: "unknown", Cores: runtime.NumCPU(), Go: runtime.Version()}
	if v := firstField("/proc/cpuinfo", "model name"); v != "" {
		m.CPU = v
	}
	if v := firstField("/proc/meminfo", "MemTotal"); v != "" {
		var kb int64
		fmt.Sscanf(v, "%d", &kb)
		m.MemoryGiB = int((kb + 1<<19) >> 20)
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	m.Device, m.FileSystem, m.MountOpts = mountOf(dir)
	m.LoadStart = loadAverage()
	return m
}

// firstField returns the value of the first "key : value" line of a /proc file.
func firstField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// mountOf finds the /proc/mounts entry with the longest mount point containing dir.
func mountOf(dir string) (device, fs, opts string) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	}
	f, err := os.Open("/proc/mounts")
	if err != nil {
		return "unknown", "unknown", ""
	}
	defer f.Close()
	best := -1
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		p := strings.Fields(sc.Text())
		if len(p) < 4 {
			continue
		}
		mp := p[1]
		if abs == mp || strings.HasPrefix(abs, strings.TrimSuffix(mp, "/")+"/") {
			if len(mp) > best {
				best, device, fs, opts = len(mp), p[0], p[2], p[3]
			}
		}
	}
	if best < 0 {
		return "unknown", "unknown", ""
	}
	return device, fs, opts
}

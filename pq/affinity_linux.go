package pq

import "golang.org/x/sys/unix"

// allowedCPUs lists the CPUs this process may run on (a container or taskset may restrict
// them), so servers are pinned only inside that set.
func allowedCPUs() []int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil
	}
	var cpus []int
	for c := 0; c < len(set)*64 && len(cpus) < set.Count(); c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus
}

// pin binds the calling OS thread (pid 0 means the caller) to one CPU. The caller has
// locked its goroutine to the thread.
func pin(cpu int) error {
	var set unix.CPUSet
	set.Set(cpu)
	return unix.SchedSetaffinity(0, &set)
}

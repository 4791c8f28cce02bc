package specfile

import "regexp"

// namePattern keeps a spec's name safe inside a workflow id and a task queue name.
var namePattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$`)

// CheckName records a problem of the "name" field when name could not stand inside a
// workflow id or a task queue name.
func (c *Collector) CheckName(name string) {
	if !namePattern.MatchString(name) {
		c.Add("name", "%q must be 1-40 lowercase letters, digits or '-', starting and ending with a letter or digit", name)
	}
}

package tephra

// Resources is a row of amounts over the snapshot's dimensions (cpu in
// millicores, memory in bytes, pods, then scalars in milli-units), read by name.
type Resources struct {
	s   *Session
	Row []float64
}

// Epsilon is Volcano's tolerance when comparing amounts.
const Epsilon = 0.1

// Get is the amount of a dimension by name (0 when the snapshot has no such dimension).
func (r Resources) Get(name string) float64 {
	if k, ok := r.s.Dim(name); ok {
		return r.Row[k]
	}
	return 0
}

// CPU in millicores.
func (r Resources) CPU() float64 { return r.Row[0] }

// Memory in bytes.
func (r Resources) Memory() float64 { return r.Row[1] }

// Pods in whole pods.
func (r Resources) Pods() float64 { return r.Row[2] }

// FitsIn says whether every dimension of r fits in idle.
func (r Resources) FitsIn(idle Resources) bool {
	for k, x := range r.Row {
		if x > idle.Row[k]+Epsilon {
			return false
		}
	}
	return true
}

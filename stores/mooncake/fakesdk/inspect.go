package fakesdk

// The pool as a test sets and reads it directly: foreign sessions,
// planted and deleted objects, and counts of calls.

// BeginForeign starts a put session for key as another client would, and
// leaves it unfinished.
func (m *Master) BeginForeign(key string, size int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nextID++
	s, _ := m.placeLocked(size)
	m.sessions[key] = session{owner: -m.nextID, started: m.now, span: s}
}

// DropForeign ends a foreign session of key without committing it.
func (m *Master) DropForeign(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.sessions[key]; ok && s.owner < 0 {
		m.freeLocked(s.span)
		delete(m.sessions, key)
	}
}

// Delete drops key's complete object.
func (m *Master) Delete(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if o, ok := m.objects[key]; ok {
		m.freeLocked(o.span)
		m.dropObjectLocked(o)
		delete(m.objects, key)
	}
}

// Plant stores obj as a complete object under key, whatever the capacity.
func (m *Master) Plant(key string, obj []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if o, ok := m.objects[key]; ok {
		m.freeLocked(o.span)
		m.dropObjectLocked(o)
	}
	capacity := m.capacity
	m.capacity = 0
	s, _ := m.placeLocked(int64(len(obj)))
	m.capacity = capacity
	copy(m.bytesLocked(s), obj)
	m.objects[key] = m.newObjectLocked(s)
}

// Object returns a copy of key's complete object.
func (m *Master) Object(key string) ([]byte, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.objects[key]
	if !ok {
		return nil, false
	}
	return append([]byte(nil), m.bytesLocked(o.span)...), true
}

// SessionOpen reports whether the master holds an unfinished put session
// for key.
func (m *Master) SessionOpen(key string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.sessions[key]
	return ok
}

// Calls returns how many times call was made.
func (m *Master) Calls(call string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls[call]
}

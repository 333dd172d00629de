package backend

// UnregisterTries is unregisterTries, for the external tests of the bound.
const UnregisterTries = unregisterTries

// Package realsdk is twosdks' store as the real SDK's build runs it.
package realsdk

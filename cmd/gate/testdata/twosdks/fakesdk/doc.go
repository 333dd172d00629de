// Package fakesdk is twosdks' store as every build runs it.
package fakesdk

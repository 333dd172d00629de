// Package rules is the engine that code generated from a store spec runs on.
//
// A spec's rules are emitted as data, not code: per SDK call a CallRule
// (what each answer means for a row, and when the call stops touching the
// caller's memory), one Admission (what a driver refuses before it records
// anything) and the refused Environment. The logic that applies that data
// lives here, once, so every store's fault texts, follow-ups and admission
// refusals read alike.
//
// Generated packages import this package, package driver (the contract)
// and package conformance (their conformance cases), and nothing else. A
// driver reads its store's generated package: one Spec value per spec
// file, each embedding a *Spec and holding a typed table of its calls
// (CodeCall and SizeCall fields), and the store's Code constants. A driver
// that serves several versions of its SDK picks among its package's Specs
// by the version its SDK reports (the generated Pick, over Pick here).
package rules

#include "textflag.h"

// func streamLines(dst, src *byte, n int)
TEXT ·streamLines(SB), NOSPLIT, $0-24
	MOVQ	dst+0(FP), DI
	MOVQ	src+8(FP), SI
	MOVQ	n+16(FP), CX
	SHRQ	$6, CX
	JZ	done
loop:
	MOVOU	0(SI), X0
	MOVOU	16(SI), X1
	MOVOU	32(SI), X2
	MOVOU	48(SI), X3
	MOVNTO	X0, 0(DI)
	MOVNTO	X1, 16(DI)
	MOVNTO	X2, 32(DI)
	MOVNTO	X3, 48(DI)
	ADDQ	$64, SI
	ADDQ	$64, DI
	DECQ	CX
	JNZ	loop
	SFENCE
done:
	RET

// func prefetchLines(p *byte, n int)
TEXT ·prefetchLines(SB), NOSPLIT, $0-16
	MOVQ	p+0(FP), SI
	MOVQ	n+8(FP), CX
	ADDQ	$63, CX
	SHRQ	$6, CX
	JZ	pdone
ploop:
	PREFETCHT0	0(SI)
	ADDQ	$64, SI
	DECQ	CX
	JNZ	ploop
pdone:
	RET

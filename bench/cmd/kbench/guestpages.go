package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// pageReportingOrder is the knob of virtio free-page reporting on a VM
// guest: free blocks of at least 2^order pages are handed back to the host
// a second or so after the guest frees them, and the guest's next first
// write to such a page faults on the host, at a fraction of memory speed.
//
// That cost falls unevenly on the two brokers. Every byte kbroker appends
// lands in a fresh page-cache page; when the previous run's log was deleted
// a few seconds earlier, those pages have just been handed back. Measured on
// this project's VM: `dd` into a new file runs at 0.4–0.6 GB/s on returned
// pages and 3.4–4.8 GB/s on pages still backed, while kfake's anonymous heap
// pays a cheaper first touch. A bare-metal host, or a VM without free-page
// reporting (most cloud instances), has no such cost, and neither does a
// production broker whose page cache is full and recycles its own pages.
const pageReportingOrder = "/sys/module/page_reporting/parameters/page_reporting_order"

// holdOrder is above the largest buddy order (NR_PAGE_ORDERS is 11 on
// x86-64), so no free block qualifies for reporting while it is set.
const holdOrder = 11

// guestPages is the free-page reporting state of the job, for the report.
type guestPages struct {
	state   string // human-readable, for the Markdown report and the JSON
	restore func() // puts the knob back; nil when nothing was changed
}

// holdGuestPages suspends free-page reporting for the job when hold is set,
// the knob exists and this process may write it (root). It always returns
// a description for the report; the caller must call restore (when not nil)
// before exiting.
func holdGuestPages(hold bool) guestPages {
	raw, err := os.ReadFile(pageReportingOrder)
	if err != nil {
		return guestPages{state: "no virtio free-page reporting on this machine"}
	}
	was := strings.TrimSpace(string(raw))
	order, err := strconv.Atoi(was)
	switch {
	case err != nil:
		return guestPages{state: fmt.Sprintf("free-page reporting in an unknown state (page_reporting_order %q)", was)}
	case order >= holdOrder:
		return guestPages{state: fmt.Sprintf("free-page reporting already off (page_reporting_order %d)", order)}
	case !hold:
		return guestPages{state: fmt.Sprintf("free-page reporting **active** (page_reporting_order %d): pages freed between runs go back to the host (-hold-guest-pages=false)", order)}
	}
	if err := os.WriteFile(pageReportingOrder, []byte(strconv.Itoa(holdOrder)), 0); err != nil {
		return guestPages{state: fmt.Sprintf("free-page reporting **active** (page_reporting_order %d): could not suspend it: %v", order, err)}
	}
	fmt.Fprintf(os.Stderr, "kbench: suspended free-page reporting for the job (page_reporting_order %d -> %d); if kbench dies, restore it with: echo %d > %s\n",
		order, holdOrder, order, pageReportingOrder)
	return guestPages{
		state: fmt.Sprintf("free-page reporting suspended for the job (page_reporting_order %d → %d, restored at exit), so freed guest pages stay backed as on bare metal", order, holdOrder),
		restore: func() {
			if err := os.WriteFile(pageReportingOrder, []byte(was), 0); err != nil {
				fmt.Fprintf(os.Stderr, "kbench: could not restore %s to %s: %v\n", pageReportingOrder, was, err)
			}
		},
	}
}

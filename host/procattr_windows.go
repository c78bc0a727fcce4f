//go:build windows

package host

import (
	"os/exec"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// setProcAttr has the plugin created suspended, so that startCmd puts it
// in its job object before it runs a single instruction (and so before it
// can start a child outside the job). Windows has no process groups to
// signal and no parent-death signal: the job object stands for both.
// Other attributes a Runner set are kept.
func setProcAttr(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.CreationFlags |= windows.CREATE_SUSPENDED
}

// sysProc is what Windows adds to a plugin process: its job object.
type sysProc struct {
	job *job // nil when the system refused one
}

// job is a plugin's job object: the plugin and every process it starts
// belong to it (children inherit their parent's job), and the job kills
// them all when its last handle closes, so when the host exits or dies
// too (JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE). The system may refuse one (an
// old Windows whose job objects do not nest, with the host in a job
// already): the plugin then runs without.
type job struct {
	mu sync.Mutex
	h  windows.Handle // 0 once closed
}

// terminate kills the job's processes; false when it could not (closed).
func (j *job) terminate() bool {
	if j == nil {
		return false
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.h != 0 && windows.TerminateJobObject(j.h, 1) == nil
}

// close kills what is left in the job and closes its handle, once.
func (j *job) close() {
	if j == nil {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.h != 0 {
		windows.TerminateJobObject(j.h, 1)
		windows.CloseHandle(j.h)
		j.h = 0
	}
}

// startCmd starts cmd suspended, puts it in a new job object, then lets
// it run. A plugin that cannot be resumed is killed and reaped.
func startCmd(cmd *exec.Cmd) (sysProc, error) {
	if err := cmd.Start(); err != nil {
		return sysProc{}, err
	}
	pid := uint32(cmd.Process.Pid)
	var j *job
	if h, err := killOnCloseJob(); err == nil {
		if assignToJob(h, pid) == nil {
			j = &job{h: h}
		} else {
			windows.CloseHandle(h)
		}
	}
	if err := resumeProcess(pid); err != nil {
		j.close()
		cmd.Process.Kill()
		cmd.Wait()
		return sysProc{}, err
	}
	return sysProc{job: j}, nil
}

// killOnCloseJob makes a job object that kills its processes when its
// last handle closes. The handle is not inherited: only the host holds it.
func killOnCloseJob() (windows.Handle, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return 0, err
	}
	var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation, uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return 0, err
	}
	return job, nil
}

// assignToJob puts process pid in job.
func assignToJob(job windows.Handle, pid uint32) error {
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, pid)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(h)
	return windows.AssignProcessToJobObject(job, h)
}

// resumeProcess resumes the threads of process pid, which was created
// suspended (os/exec closes the handle of its first thread, so it is
// found again among the system's threads).
func resumeProcess(pid uint32) error {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPTHREAD, 0)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(snap)
	te := windows.ThreadEntry32{Size: uint32(unsafe.Sizeof(windows.ThreadEntry32{}))}
	resumed := false
	for err = windows.Thread32First(snap, &te); err == nil; err = windows.Thread32Next(snap, &te) {
		if te.OwnerProcessID != pid {
			continue
		}
		th, err := windows.OpenThread(windows.THREAD_SUSPEND_RESUME, false, te.ThreadID)
		if err != nil {
			return err
		}
		_, err = windows.ResumeThread(th)
		windows.CloseHandle(th)
		if err != nil {
			return err
		}
		resumed = true
	}
	if !resumed {
		return syscall.Errno(windows.ERROR_NOT_FOUND)
	}
	return nil
}

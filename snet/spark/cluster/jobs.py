"""The Spark jobs of one run, tagged so that Ctrl-C cancels them and no other user's jobs of a shared context
(a tag is the calling thread's, as Spark's are; :meth:`RunJobs.cancel` works from any thread)."""

from __future__ import annotations

import contextlib
import logging
import time
import uuid

log = logging.getLogger("snet.spark")


class RunJobs:
    def __init__(self, session, tag: str | None = None):
        from snet.spark.cluster.session import is_connect_session

        self.session, self.tag = session, tag or f"snet-run-{uuid.uuid4().hex}"
        self.connect = is_connect_session(session)

    def add(self) -> None:
        """Tag the jobs this thread starts from now on (interrupting their tasks when cancelled)."""
        try:
            if self.connect:
                self.session.addTag(self.tag)
            else:
                self.session.sparkContext.addJobTag(self.tag)
                self.session.sparkContext.setInterruptOnCancel(True)
        except Exception as e:  # an older Spark: Ctrl-C then leaves the jobs to end with the process
            log.debug("could not tag the run's Spark jobs: %s", e)

    def remove(self) -> None:
        try:
            if self.connect:
                self.session.removeTag(self.tag)
            else:
                sc = self.session.sparkContext
                sc.removeJobTag(self.tag)
                if not sc.getJobTags():
                    sc.setInterruptOnCancel(False)
        except Exception as e:
            log.debug("could not untag the run's Spark jobs: %s", e)

    @contextlib.contextmanager
    def tagged(self, description: str | None = None):
        """The jobs the block starts carry the tag (and, on classic Spark, ``description``)."""
        self.add()
        try:
            if description is not None and not self.connect:
                self.session.sparkContext.setJobDescription(description)
            yield
        finally:
            self.remove()

    def cancel(self, wait: float = 0.0) -> None:
        """Cancel the run's jobs, and wait up to ``wait`` seconds for their tasks to end (Spark kills their Python
        workers in about two): a context stopped under running tasks logs their errors after snet's line."""
        try:
            if self.connect:
                self.session.interruptTag(self.tag)
                return
            sc = self.session.sparkContext
            sc.cancelJobsWithTag(self.tag)
            tracker = sc.statusTracker()
            until = time.monotonic() + wait
            while time.monotonic() < until and any(e.numRunningTasks for e in tracker.getExecutorInfos()):
                time.sleep(0.1)
        except Exception as e:  # best effort: the process is stopping anyway
            log.debug("could not cancel the run's Spark jobs: %s", e)

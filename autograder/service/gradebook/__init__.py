"""nbgrader's gradebook beside the store: the mirror that writes results into it
(:mod:`.mirror`) and when it runs (:mod:`.sync`), due dates and late penalties
(:mod:`.lateness`), which graded submission is a learner's grade (:mod:`.recorded`), and
where recorded grades are out of date (:mod:`.out_of_date`)."""

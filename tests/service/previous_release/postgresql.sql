--
-- PostgreSQL database dump
--

\restrict wf0lWFsRigOVo9QkKnAhAJR0PH0gvhmi2jHZoXSjMJNJelrBXxyw2y2VfyspSc6

-- Dumped from database version 15.18 (Debian 15.18-0+deb12u1)
-- Dumped by pg_dump version 15.18 (Debian 15.18-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: dropped; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.dropped (
    learner character varying(64) NOT NULL,
    kind character varying(16) NOT NULL,
    at double precision NOT NULL
);


--
-- Name: lesson_runs; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.lesson_runs (
    learner character varying(64) NOT NULL,
    lesson character varying(64) NOT NULL,
    runs integer NOT NULL,
    first_at double precision NOT NULL,
    last_at double precision NOT NULL
);


--
-- Name: locks; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.locks (
    name character varying(64) NOT NULL,
    owner character varying(128) NOT NULL,
    until double precision NOT NULL
);


--
-- Name: lti_context; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.lti_context (
    name character varying(64) NOT NULL,
    value text NOT NULL
);


--
-- Name: lti_lineitems; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.lti_lineitems (
    exercise character varying(64) NOT NULL,
    url text NOT NULL,
    source character varying(16)
);


--
-- Name: lti_people; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.lti_people (
    learner character varying(64) NOT NULL,
    issuer character varying(255) NOT NULL,
    sub character varying(255) NOT NULL,
    name text,
    roles text,
    launched integer DEFAULT 0 NOT NULL,
    seen_at double precision NOT NULL
);


--
-- Name: marks; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.marks (
    name character varying(64) NOT NULL,
    value text
);


--
-- Name: passback; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.passback (
    learner character varying(64) NOT NULL,
    exercise character varying(64) NOT NULL,
    score double precision NOT NULL,
    max_score double precision NOT NULL,
    submission character varying(64) NOT NULL,
    version integer NOT NULL,
    changed_at double precision NOT NULL,
    sent_version integer DEFAULT 0 NOT NULL,
    sent_at double precision,
    tries integer DEFAULT 0 NOT NULL,
    next_at double precision DEFAULT '0'::double precision NOT NULL,
    problem text,
    refused integer,
    lease_owner character varying(128),
    lease_until double precision
);


--
-- Name: processes; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.processes (
    name character varying(128) NOT NULL,
    role character varying(16) NOT NULL,
    slots integer DEFAULT 0 NOT NULL,
    seen_at double precision NOT NULL,
    problem text
);


--
-- Name: submissions; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.submissions (
    seq integer NOT NULL,
    id character varying(64) NOT NULL,
    learner character varying(64) NOT NULL,
    client character varying(64) DEFAULT ''::character varying NOT NULL,
    exercise character varying(64) NOT NULL,
    notebook bytea NOT NULL,
    status character varying(16) NOT NULL,
    submitted_at double precision NOT NULL,
    started_at double precision,
    finished_at double precision,
    attempts integer DEFAULT 0 NOT NULL,
    graded integer DEFAULT 0 NOT NULL,
    result text,
    gradebook character varying(16),
    lease_owner character varying(128),
    lease_until double precision,
    replaced_by character varying(64),
    version character varying(64),
    regrade_of text
);


--
-- Name: submissions_seq_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.submissions_seq_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: submissions_seq_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.submissions_seq_seq OWNED BY public.submissions.seq;


--
-- Name: submissions seq; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.submissions ALTER COLUMN seq SET DEFAULT nextval('public.submissions_seq_seq'::regclass);


--
-- Data for Name: dropped; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.dropped VALUES ('eve', 'withdrawn', 1800000000);


--
-- Data for Name: lesson_runs; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.lesson_runs VALUES ('ada', 'intro', 1, 1800000000, 1800000000);


--
-- Data for Name: locks; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.locks VALUES ('gradebook', 'host:1', 1796665042.9366388);


--
-- Data for Name: lti_context; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.lti_context VALUES ('context_id', 'course-1');


--
-- Data for Name: lti_lineitems; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.lti_lineitems VALUES ('update_with_donate', 'https://lms.test/li/1', 'lms');


--
-- Data for Name: lti_people; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.lti_people VALUES ('lti-ada', 'https://lms.test', 's-1', 'Ada L', '["Learner"]', 1, 1800000000);


--
-- Data for Name: marks; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.marks VALUES ('gradebook_deadlines', '{}');


--
-- Data for Name: passback; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.passback VALUES ('ada', 'update_with_donate', 3, 5, 'p0TGmAETGO6w7dN-QK99jCpDcb6Zuegp', 2, 1800000000, 1, NULL, 0, 0, 'retrying', NULL, NULL, NULL);


--
-- Data for Name: processes; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.processes VALUES ('host:1', 'worker', 2, 1796664922.8391542, NULL);


--
-- Data for Name: submissions; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.submissions VALUES (1, 'p0TGmAETGO6w7dN-QK99jCpDcb6Zuegp', 'ada', '10.0.0.1', 'update_with_donate', '\x7b2263656c6c73223a205b7b2263656c6c5f74797065223a2022636f6465222c2022736f75726365223a202278203d2031222c20226d65746164617461223a207b7d7d5d2c20226d65746164617461223a207b7d2c20226e62666f726d6174223a20342c20226e62666f726d61745f6d696e6f72223a20357d', 'regraded', 1800000000, 1796664922.2766612, 1796664922.3646572, 1, 1, '{"checks": [{"grade_id": "test_one", "title": "One", "score": 3.0, "max_score": 5.0, "status": "failed", "output": "not yet"}], "output": "", "status": "graded", "digest": "d", "seconds": 1.5, "learner_output": "", "exercise": "", "version": "v1"}', NULL, 'host:1:0', NULL, 'EKZ6KOPCB9nJJ4x08mzeo0OIOcQ3LiVS', 'v1', NULL);
INSERT INTO public.submissions VALUES (2, 'EKZ6KOPCB9nJJ4x08mzeo0OIOcQ3LiVS', 'ada', 'regrade', 'update_with_donate', '\x7b2263656c6c73223a205b7b2263656c6c5f74797065223a2022636f6465222c2022736f75726365223a202278203d2031222c20226d65746164617461223a207b7d7d5d2c20226d65746164617461223a207b7d2c20226e62666f726d6174223a20342c20226e62666f726d61745f6d696e6f72223a20357d', 'queued', 1800000000, NULL, NULL, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, '{"score": 3.0, "max_score": 5.0, "id": "p0TGmAETGO6w7dN-QK99jCpDcb6Zuegp", "version": "v1"}');
INSERT INTO public.submissions VALUES (3, 'gQC3KvstPamn8yOy74JQFqiOGYEoZlrz', 'bob', '10.0.0.2', 'update_with_donate', '\x7b2263656c6c73223a205b7b2263656c6c5f74797065223a2022636f6465222c2022736f75726365223a202278203d2031222c20226d65746164617461223a207b7d7d5d2c20226d65746164617461223a207b7d2c20226e62666f726d6174223a20342c20226e62666f726d61745f6d696e6f72223a20357d', 'queued', 1800000001, NULL, NULL, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL);


--
-- Name: submissions_seq_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.submissions_seq_seq', 3, true);


--
-- Name: dropped dropped_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.dropped
    ADD CONSTRAINT dropped_pkey PRIMARY KEY (learner);


--
-- Name: lesson_runs lesson_runs_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.lesson_runs
    ADD CONSTRAINT lesson_runs_pkey PRIMARY KEY (learner, lesson);


--
-- Name: locks locks_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.locks
    ADD CONSTRAINT locks_pkey PRIMARY KEY (name);


--
-- Name: lti_context lti_context_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.lti_context
    ADD CONSTRAINT lti_context_pkey PRIMARY KEY (name);


--
-- Name: lti_lineitems lti_lineitems_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.lti_lineitems
    ADD CONSTRAINT lti_lineitems_pkey PRIMARY KEY (exercise);


--
-- Name: lti_people lti_people_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.lti_people
    ADD CONSTRAINT lti_people_pkey PRIMARY KEY (learner);


--
-- Name: marks marks_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.marks
    ADD CONSTRAINT marks_pkey PRIMARY KEY (name);


--
-- Name: passback passback_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.passback
    ADD CONSTRAINT passback_pkey PRIMARY KEY (learner, exercise);


--
-- Name: processes processes_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.processes
    ADD CONSTRAINT processes_pkey PRIMARY KEY (name);


--
-- Name: submissions submissions_id_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.submissions
    ADD CONSTRAINT submissions_id_key UNIQUE (id);


--
-- Name: submissions submissions_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.submissions
    ADD CONSTRAINT submissions_pkey PRIMARY KEY (seq);


--
-- Name: submissions_client; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX submissions_client ON public.submissions USING btree (client, status);


--
-- Name: submissions_learner; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX submissions_learner ON public.submissions USING btree (learner, submitted_at);


--
-- Name: submissions_status; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX submissions_status ON public.submissions USING btree (status, seq);


--
-- PostgreSQL database dump complete
--

\unrestrict wf0lWFsRigOVo9QkKnAhAJR0PH0gvhmi2jHZoXSjMJNJelrBXxyw2y2VfyspSc6


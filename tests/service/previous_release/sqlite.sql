BEGIN TRANSACTION;
CREATE TABLE dropped (
	learner VARCHAR(64) NOT NULL, 
	kind VARCHAR(16) NOT NULL, 
	at FLOAT NOT NULL, 
	PRIMARY KEY (learner)
);
INSERT INTO "dropped" VALUES('eve','withdrawn',1800000000.0);
CREATE TABLE lesson_runs (
	learner VARCHAR(64) NOT NULL, 
	lesson VARCHAR(64) NOT NULL, 
	runs INTEGER NOT NULL, 
	first_at FLOAT NOT NULL, 
	last_at FLOAT NOT NULL, 
	PRIMARY KEY (learner, lesson)
);
INSERT INTO "lesson_runs" VALUES('ada','intro',1,1800000000.0,1800000000.0);
CREATE TABLE locks (
	name VARCHAR(64) NOT NULL, 
	owner VARCHAR(128) NOT NULL, 
	until FLOAT NOT NULL, 
	PRIMARY KEY (name)
);
INSERT INTO "locks" VALUES('gradebook','host:1',1.79666503079669165614e+09);
CREATE TABLE lti_context (
	name VARCHAR(64) NOT NULL, 
	value TEXT NOT NULL, 
	PRIMARY KEY (name)
);
INSERT INTO "lti_context" VALUES('context_id','course-1');
CREATE TABLE lti_lineitems (
	exercise VARCHAR(64) NOT NULL, 
	url TEXT NOT NULL, 
	source VARCHAR(16), 
	PRIMARY KEY (exercise)
);
INSERT INTO "lti_lineitems" VALUES('update_with_donate','https://lms.test/li/1','lms');
CREATE TABLE lti_people (
	learner VARCHAR(64) NOT NULL, 
	issuer VARCHAR(255) NOT NULL, 
	sub VARCHAR(255) NOT NULL, 
	name TEXT, 
	roles TEXT, 
	launched INTEGER DEFAULT '0' NOT NULL, 
	seen_at FLOAT NOT NULL, 
	PRIMARY KEY (learner)
);
INSERT INTO "lti_people" VALUES('lti-ada','https://lms.test','s-1','Ada L','["Learner"]',1,1800000000.0);
CREATE TABLE marks (
	name VARCHAR(64) NOT NULL, 
	value TEXT, 
	PRIMARY KEY (name)
);
INSERT INTO "marks" VALUES('gradebook_deadlines','{}');
CREATE TABLE passback (
	learner VARCHAR(64) NOT NULL, 
	exercise VARCHAR(64) NOT NULL, 
	score FLOAT NOT NULL, 
	max_score FLOAT NOT NULL, 
	submission VARCHAR(64) NOT NULL, 
	version INTEGER NOT NULL, 
	changed_at FLOAT NOT NULL, 
	sent_version INTEGER DEFAULT '0' NOT NULL, 
	sent_at FLOAT, 
	tries INTEGER DEFAULT '0' NOT NULL, 
	next_at FLOAT DEFAULT '0' NOT NULL, 
	problem TEXT, 
	refused INTEGER, 
	lease_owner VARCHAR(128), 
	lease_until FLOAT, 
	PRIMARY KEY (learner, exercise)
);
INSERT INTO "passback" VALUES('ada','update_with_donate',3.0,5.0,'322xRL5l3i92J_oPdqJa7XD9P3Htv6J9',2,1800000000.0,1,NULL,0,0.0,'retrying',NULL,NULL,NULL);
CREATE TABLE processes (
	name VARCHAR(128) NOT NULL, 
	role VARCHAR(16) NOT NULL, 
	slots INTEGER DEFAULT '0' NOT NULL, 
	seen_at FLOAT NOT NULL, 
	problem TEXT, 
	PRIMARY KEY (name)
);
INSERT INTO "processes" VALUES('host:1','worker',2,1.7966649107535378933e+09,NULL);
CREATE TABLE submissions (
	seq INTEGER NOT NULL, 
	id VARCHAR(64) NOT NULL, 
	learner VARCHAR(64) NOT NULL, 
	client VARCHAR(64) DEFAULT '' NOT NULL, 
	exercise VARCHAR(64) NOT NULL, 
	notebook BLOB NOT NULL, 
	status VARCHAR(16) NOT NULL, 
	submitted_at FLOAT NOT NULL, 
	started_at FLOAT, 
	finished_at FLOAT, 
	attempts INTEGER DEFAULT '0' NOT NULL, 
	graded INTEGER DEFAULT '0' NOT NULL, 
	result TEXT, 
	gradebook VARCHAR(16), 
	lease_owner VARCHAR(128), 
	lease_until FLOAT, 
	replaced_by VARCHAR(64), 
	version VARCHAR(64), 
	regrade_of TEXT, 
	PRIMARY KEY (seq), 
	UNIQUE (id)
);
INSERT INTO "submissions" VALUES(1,'322xRL5l3i92J_oPdqJa7XD9P3Htv6J9','ada','10.0.0.1','update_with_donate',X'7B2263656C6C73223A205B7B2263656C6C5F74797065223A2022636F6465222C2022736F75726365223A202278203D2031222C20226D65746164617461223A207B7D7D5D2C20226D65746164617461223A207B7D2C20226E62666F726D6174223A20342C20226E62666F726D61745F6D696E6F72223A20357D','regraded',1800000000.0,1.79666491042456078529e+09,1796664910.498,1,1,'{"checks": [{"grade_id": "test_one", "title": "One", "score": 3.0, "max_score": 5.0, "status": "failed", "output": "not yet"}], "output": "", "status": "graded", "digest": "d", "seconds": 1.5, "learner_output": "", "exercise": "", "version": "v1"}',NULL,'host:1:0',NULL,'4ZLSzFc_6OcLEGJe-Wx3lqGGTh_5xPJk','v1',NULL);
INSERT INTO "submissions" VALUES(2,'4ZLSzFc_6OcLEGJe-Wx3lqGGTh_5xPJk','ada','regrade','update_with_donate',X'7B2263656C6C73223A205B7B2263656C6C5F74797065223A2022636F6465222C2022736F75726365223A202278203D2031222C20226D65746164617461223A207B7D7D5D2C20226D65746164617461223A207B7D2C20226E62666F726D6174223A20342C20226E62666F726D61745F6D696E6F72223A20357D','queued',1800000000.0,NULL,NULL,0,0,NULL,NULL,NULL,NULL,NULL,NULL,'{"score": 3.0, "max_score": 5.0, "id": "322xRL5l3i92J_oPdqJa7XD9P3Htv6J9", "version": "v1"}');
INSERT INTO "submissions" VALUES(3,'WXXxT8FSHmv8v-d50GctY5Kt2KAEDjRk','bob','10.0.0.2','update_with_donate',X'7B2263656C6C73223A205B7B2263656C6C5F74797065223A2022636F6465222C2022736F75726365223A202278203D2031222C20226D65746164617461223A207B7D7D5D2C20226D65746164617461223A207B7D2C20226E62666F726D6174223A20342C20226E62666F726D61745F6D696E6F72223A20357D','queued',1800000001.0,NULL,NULL,0,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL);
CREATE INDEX submissions_learner ON submissions (learner, submitted_at);
CREATE INDEX submissions_status ON submissions (status, seq);
CREATE INDEX submissions_client ON submissions (client, status);
COMMIT;

package protocheck

import (
	"bytes"
	"context"
	"io/fs"
	"sync"

	"github.com/bufbuild/protocompile"
	"github.com/bufbuild/protocompile/protoutil"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// Language features of editions: (pb.cpp) and (pb.java), extensions of
// google.protobuf.FeatureSet declared in google/protobuf/cpp_features.proto
// and java_features.proto. Their descriptors come from protocompile's
// standard imports, compiled once when a rule first needs them.
var langFeatures struct {
	once      sync.Once
	cpp, java protoreflect.ExtensionType
}

func loadLangFeatures() {
	langFeatures.once.Do(func() {
		const name = "plugkit_features.proto"
		src := []byte(`syntax = "proto3"; import "google/protobuf/cpp_features.proto"; import "google/protobuf/java_features.proto";`)
		c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(protocompile.ResolverFunc(func(p string) (protocompile.SearchResult, error) {
			if p == name {
				return protocompile.SearchResult{Source: bytes.NewReader(src)}, nil
			}
			return protocompile.SearchResult{}, fs.ErrNotExist
		}))}
		files, err := c.Compile(context.Background(), name)
		if err != nil || len(files) != 1 {
			return // the features then resolve to nothing and the rules fall back to options
		}
		imps := files[0].Imports()
		for i := 0; i < imps.Len(); i++ {
			xs := imps.Get(i).Extensions()
			for j := 0; j < xs.Len(); j++ {
				switch x := xs.Get(j); x.FullName() {
				case "pb.cpp":
					langFeatures.cpp = dynamicpb.NewExtensionType(x)
				case "pb.java":
					langFeatures.java = dynamicpb.NewExtensionType(x)
				}
			}
		}
	})
}

// langFeature resolves the feature called name of a (pb.cpp) or (pb.java)
// extension for d: set on d itself, else inherited from the enclosing
// oneof, messages and file, else the edition's default. ok is false if it
// cannot be resolved.
func langFeature(d protoreflect.Descriptor, java bool, name protoreflect.Name) (protoreflect.EnumNumber, protoreflect.FieldDescriptor, bool) {
	loadLangFeatures()
	xt := langFeatures.cpp
	if java {
		xt = langFeatures.java
	}
	if xt == nil {
		return 0, nil, false
	}
	f := xt.TypeDescriptor().Message().Fields().ByName(name)
	if f == nil {
		return 0, nil, false
	}
	if d.ParentFile().Syntax() == protoreflect.Editions {
		for e := d; e != nil; e = featureParent(e) {
			if v, ok := setFeature(e, xt.TypeDescriptor().Number(), f.Number()); ok {
				return v, f, true
			}
		}
	}
	ed := fileEdition(d)
	key := langDefaultKey{java, name, ed}
	if v, ok := langDefaults.Load(key); ok {
		return v.(protoreflect.EnumNumber), f, true
	}
	v, err := protoutil.GetCustomFeatureDefault(ed, xt, f)
	if err != nil {
		return 0, nil, false
	}
	langDefaults.Store(key, v.Enum())
	return v.Enum(), f, true
}

// langDefaults caches the edition defaults of language features, which
// every string field of a proto2 or proto3 file needs.
var langDefaults sync.Map

type langDefaultKey struct {
	java    bool
	name    protoreflect.Name
	edition descriptorpb.Edition
}

// featureParent is the element d inherits features from: a field in a
// oneof inherits from the oneof, other elements from their parent.
func featureParent(d protoreflect.Descriptor) protoreflect.Descriptor {
	if f, ok := d.(protoreflect.FieldDescriptor); ok {
		if o := f.ContainingOneof(); o != nil && !o.IsSynthetic() {
			return o
		}
	}
	return d.Parent()
}

// setFeature reads features.(EXT).FIELD from d's own options, whether the
// extension was parsed or kept as unknown bytes.
func setFeature(d protoreflect.Descriptor, ext, field protoreflect.FieldNumber) (protoreflect.EnumNumber, bool) {
	opts := d.Options()
	if opts == nil {
		return 0, false
	}
	m := opts.ProtoReflect()
	ff := m.Descriptor().Fields().ByName("features")
	if ff == nil || !m.Has(ff) {
		return 0, false
	}
	fs := m.Get(ff).Message()
	var val protoreflect.EnumNumber
	found := false
	fs.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Number() != ext || fd.Message() == nil {
			return true
		}
		v.Message().Range(func(inner protoreflect.FieldDescriptor, iv protoreflect.Value) bool {
			if inner.Number() == field && inner.Enum() != nil {
				val, found = iv.Enum(), true
				return false
			}
			return true
		})
		if !found {
			val, found = fieldFromBytes(v.Message().GetUnknown(), field)
		}
		return false
	})
	if found {
		return val, true
	}
	// An extension no registry knew: wire bytes of the FeatureSet.
	b := fs.GetUnknown()
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return 0, false
		}
		b = b[n:]
		if num == ext && typ == protowire.BytesType {
			inner, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return 0, false
			}
			if v, ok := fieldFromBytes(inner, field); ok {
				val, found = v, true
			}
			b = b[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return 0, false
		}
		b = b[m:]
	}
	return val, found
}

// fieldFromBytes finds the last varint value of field in wire bytes.
func fieldFromBytes(b []byte, field protoreflect.FieldNumber) (protoreflect.EnumNumber, bool) {
	var val protoreflect.EnumNumber
	found := false
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return 0, false
		}
		b = b[n:]
		if num == field && typ == protowire.VarintType {
			v, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return 0, false
			}
			val, found = protoreflect.EnumNumber(v), true
			b = b[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return 0, false
		}
		b = b[m:]
	}
	return val, found
}

// langFeaturePath is the source path, inside a field, of its
// features.(pb.cpp|pb.java).NAME option (features is field 21 of
// FieldOptions).
func langFeaturePath(java bool, name protoreflect.Name) []int32 {
	loadLangFeatures()
	xt := langFeatures.cpp
	if java {
		xt = langFeatures.java
	}
	if xt == nil {
		return nil
	}
	f := xt.TypeDescriptor().Message().Fields().ByName(name)
	if f == nil {
		return nil
	}
	return []int32{8, 21, int32(xt.TypeDescriptor().Number()), int32(f.Number())}
}

// cppStringType returns a field's C++ string type (STRING, CORD or VIEW)
// and whether it is a STRING_PIECE: the ctype option when set (before
// edition 2024), else the (pb.cpp).string_type feature.
func cppStringType(f protoreflect.FieldDescriptor) (string, bool) {
	o := fieldOpts(f)
	if o.Ctype != nil && fileEdition(f) < descriptorpb.Edition_EDITION_2024 {
		switch o.GetCtype() {
		case descriptorpb.FieldOptions_CORD:
			return "CORD", false
		case descriptorpb.FieldOptions_STRING_PIECE:
			return "STRING", true
		case descriptorpb.FieldOptions_STRING:
			return "STRING", false
		}
		if f.ParentFile().Syntax() != protoreflect.Editions {
			return "STRING", false
		}
	}
	if v, fd, ok := langFeature(f, false, "string_type"); ok {
		if ev := fd.Enum().Values().ByNumber(v); ev != nil {
			return string(ev.Name()), false
		}
	}
	return "STRING", false
}

// fileEdition is the edition of d's file (proto2 and proto3 count as the
// editions of those names).
func fileEdition(d protoreflect.Descriptor) descriptorpb.Edition {
	switch d.ParentFile().Syntax() {
	case protoreflect.Proto2:
		return descriptorpb.Edition_EDITION_PROTO2
	case protoreflect.Proto3:
		return descriptorpb.Edition_EDITION_PROTO3
	}
	return protoutil.ProtoFromFileDescriptor(d.ParentFile()).GetEdition()
}

// javaUTF8 returns how Java checks UTF-8 in a string field, VERIFY or the
// field's utf8_validation feature: java_string_check_utf8 decides when the
// file is not in editions or sets it, else the (pb.java).utf8_validation
// feature (inherited from the file and enclosing messages) does.
func javaUTF8(f protoreflect.FieldDescriptor) string {
	def := descriptorpb.FeatureSet_Utf8Validation(feature(f, "utf8_validation"))
	o := fileOpts(f.ParentFile())
	if f.ParentFile().Syntax() != protoreflect.Editions || o.JavaStringCheckUtf8 != nil {
		if o.GetJavaStringCheckUtf8() {
			return descriptorpb.FeatureSet_VERIFY.String()
		}
		return def.String()
	}
	if v, fd, ok := langFeature(f, true, "utf8_validation"); ok {
		if ev := fd.Enum().Values().ByNumber(v); ev != nil && ev.Name() == "VERIFY" {
			return descriptorpb.FeatureSet_VERIFY.String()
		}
	}
	return def.String()
}
